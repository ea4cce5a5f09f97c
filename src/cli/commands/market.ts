import type { Command } from 'commander';
import type { MarketSummary } from '../../modules/importers/publishers/market.service.ts';
import { countryOption, feedLimits, headerOption, httpReadOptions, integerOption, log, urlOption, withDb } from '../options.ts';
import { printPublisherImport, progressRenderer } from '../progress.ts';

interface MarketCliOptions {
  baseUrl?: string;
  geofabrikUrl?: string;
  overtureUrl?: string;
  foursquareUrl?: string;
  overtureRelease?: string;
  foursquareRelease?: string;
  header?: Record<string, string>;
  allowPrivateNetworks?: boolean;
  cacheDir: string;
  batchSize?: number;
  enrich?: boolean;
  json?: boolean;
}

const share = (n: number, of: number) => (of > 0 ? `${((100 * n) / of).toFixed(1)} %` : '-');

function printMarket(s: MarketSummary): void {
  console.log(`\n${s.country}: places per source and after merging (phone, website, email)`);
  const row = (label: string, c: MarketSummary['merged']) =>
    console.log(
      `  ${label.padEnd(12)} ${String(c.places).padStart(9)}   phone ${share(c.phone, c.places).padStart(7)}   website ${share(c.website, c.places).padStart(7)}   email ${share(c.email, c.places).padStart(7)}`,
    );
  for (const [source, c] of Object.entries(s.bySource)) row(source, c);
  row('merged', s.merged);
}

/**
 * `leadatlas market XX` (docs/market.md): a country from OpenStreetMap, Overture and Foursquare in one command,
 * each found, read, kept inside its border and merged, then one summary. The work is in
 * `modules/importers/publishers/market.service.ts`; this file parses the options and prints.
 */
export function registerMarket(program: Command): void {
  program
    .command('market')
    .description(
      'load a country from OpenStreetMap, Overture and Foursquare in one command: each found, read, kept inside the border, imported as a dataset and merged; one summary (docs/market.md)',
    )
    .argument('<country>', 'ISO 3166-1 alpha-2 code, e.g. PT', countryOption)
    .option('--base-url <url>', 'a mirror of the three: geofabrik/, overture/ and foursquare/ under it (docs/market.md)', urlOption)
    .option('--geofabrik-url <url>', "Geofabrik's root (default https://download.geofabrik.de/)", urlOption)
    .option('--overture-url <url>', "Overture's STAC catalog (default https://stac.overturemaps.org/)", urlOption)
    .option('--foursquare-url <url>', "Foursquare's bucket (default https://fsq-os-places-us-east-1.s3.amazonaws.com/)", urlOption)
    .option('--overture-release <id>', 'latest, or a release of the catalog')
    .option('--foursquare-release <dt>', 'latest, or a release of the bucket (dt=…)')
    .option('--header <name: value>', 'a header sent with every request (repeatable)', headerOption)
    .option('--allow-private-networks', 'let the URLs reach private and loopback addresses (a mirror on the local network)')
    .option('--cache-dir <dir>', 'where the OpenStreetMap extract is downloaded to', './var/downloads')
    .option('--batch-size <n>', 'places per transaction', integerOption(1, 100_000))
    .option('--enrich', "then look for contacts on the country's places' own websites (leadatlas enrich --country XX)")
    .option('--json', 'print the summary as JSON on stdout')
    .action((country: string, o: MarketCliOptions) =>
      withDb(async (db, config) => {
        const { prepareDatabase } = await import('../../bootstrap.ts');
        const { loadMarket, MIRROR_LAYOUT } = await import('../../modules/importers/publishers/market.service.ts');
        await prepareDatabase(db);
        const root = (publisher: keyof typeof MIRROR_LAYOUT, own: string | undefined) =>
          own ?? (o.baseUrl ? new URL(MIRROR_LAYOUT[publisher], o.baseUrl).href : undefined);
        const source = (baseUrl: string | undefined, releaseId: string | undefined) => ({
          ...(baseUrl ? { baseUrl } : {}),
          ...(releaseId ? { release: releaseId } : {}),
        });
        const bars = new Map<string, ReturnType<typeof progressRenderer>>();
        const summary = await loadMarket(db, {
          country,
          http: httpReadOptions(o),
          sources: {
            osm: source(root('osm', o.geofabrikUrl), undefined),
            overture: source(root('overture', o.overtureUrl), o.overtureRelease),
            foursquare: source(root('foursquare', o.foursquareUrl), o.foursquareRelease),
          },
          osm: { cacheDir: o.cacheDir, follow: feedLimits(config) },
          log,
          ...(o.batchSize ? { batchSize: o.batchSize } : {}),
          onProgress: (publisher, p) => {
            if (!bars.has(publisher)) bars.set(publisher, progressRenderer(publisher));
            bars.get(publisher)?.(p);
          },
        });
        for (const r of summary.imports) printPublisherImport(r);
        if (o.enrich) {
          const { enrichCommand } = await import('../../modules/enrichment/enrichment.cli.ts');
          await enrichCommand(db, config, { country }, log);
          const { countryCoverage } = await import('../../modules/places/coverage.repository.ts');
          Object.assign(summary, await countryCoverage(db, country, Object.keys(summary.bySource), { found: true }));
        }
        if (o.json) console.log(JSON.stringify({ ...summary, imports: summary.imports.map(({ summary: _, ...r }) => r) }, null, 2));
        else printMarket(summary);
      }),
    );
}
