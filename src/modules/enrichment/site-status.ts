import { registrableDomain } from '../../infra/web-domain.ts';
import { isParkedPage } from '../contacts/parked.ts';
import type { WebsiteStatus } from '../contacts/trust.types.ts';
import type { SiteCrawl } from './crawler/crawler.ts';

/**
 * A website's status from the crawler's fetch of it (docs/trust.md): what `enrich_sites.site_status` keeps
 * and the trust pass shows. The home page answered → `live`, or `redirected` when it ended on another
 * registrable domain, or `parked` when it is a parking or for-sale page (`contacts/parked.ts`); DNS or the
 * connection failed → `dead`; anything else (robots.txt forbids, a timeout, a 4xx or 5xx, a rate limit, the
 * outbound guard) says nothing of the site → `unknown`. A `not_modified` answer keeps what the last full
 * fetch said (`previous`), `live` when there was none.
 */
export function websiteStatusOf(
  crawl: Pick<SiteCrawl, 'outcome' | 'pages'>,
  siteUrl: string,
  previous: { site_status: string | null; final_domain: string | null } | null = null,
): { site_status: WebsiteStatus; final_domain: string | null } {
  switch (crawl.outcome) {
    case 'dns_error':
    case 'unreachable':
      return { site_status: 'dead', final_domain: null };
    case 'not_modified': {
      const kept = previous?.site_status;
      if (kept === 'live' || kept === 'redirected' || kept === 'parked')
        return { site_status: kept, final_domain: previous?.final_domain ?? null };
      return { site_status: 'live', final_domain: null };
    }
    case 'ok':
    case 'not_html':
    case 'too_large':
    case 'javascript_only': {
      const home = crawl.pages[0];
      const finalDomain = home ? registrableDomain(home.url) : null;
      if (home && isParkedPage(home.html, home.url)) return { site_status: 'parked', final_domain: finalDomain };
      const own = registrableDomain(siteUrl);
      if (finalDomain !== null && own !== null && finalDomain !== own) return { site_status: 'redirected', final_domain: finalDomain };
      return { site_status: 'live', final_domain: null };
    }
    default:
      return { site_status: 'unknown', final_domain: null };
  }
}
