import type { Command } from 'commander';

/** `leadatlas formats`: the import formats and how each is detected. */
export function registerFormats(program: Command): void {
  program
    .command('formats')
    .description('list the import formats and how each is detected')
    .action(async () => {
      const { readerFactories } = await import('../../modules/importers/readers/index.ts');
      const { osmChangeFormat } = await import('../../modules/importers/osm-change.service.ts');
      for (const f of readerFactories) console.log(`${f.format.padEnd(18)} ${f.description}`);
      console.log(
        `${osmChangeFormat.padEnd(18)} OpenStreetMap change file (.osc, .osc.gz): creates, modifies and retires the places of an imported OSM dataset`,
      );
    });
}
