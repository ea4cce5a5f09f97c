/**
 * The names of the crawler bench's farm of local web sites (bench/crawler.ts `--mode farm`): site `i` is a
 * host of its own, resolved by the farm's DNS server to one of eight loopback addresses, so a crawler's
 * per-host politeness applies to each site as it would on the web.
 */
const trades = ['baeckerei', 'trattoria', 'boulangerie', 'taberna', 'kahvila', 'padaria', 'sushi', 'kapsalon'];
const tlds = ['de', 'it', 'fr', 'es', 'fi', 'pt', 'jp', 'nl'];

export function siteName(i: number): string {
  return `${trades[i % trades.length]}-${i}.${tlds[(i >> 3) % tlds.length]}`;
}

export const farmUrl = (i: number, port: number) => `http://${siteName(i)}:${port}/`;
