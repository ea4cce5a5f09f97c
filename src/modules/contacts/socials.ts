export type SocialNetwork = 'facebook' | 'instagram' | 'linkedin' | 'x' | 'youtube' | 'tiktok';

export interface SocialProfile {
  network: SocialNetwork;
  url: string;
}

const HOSTS: Record<string, SocialNetwork> = {
  'facebook.com': 'facebook',
  'fb.com': 'facebook',
  'fb.me': 'facebook',
  'instagram.com': 'instagram',
  'instagr.am': 'instagram',
  'linkedin.com': 'linkedin',
  'twitter.com': 'x',
  'x.com': 'x',
  'youtube.com': 'youtube',
  'tiktok.com': 'tiktok',
};

/** `network:handle` spellings the sources use (Foursquare's `twitter`, Overture's socials). */
const HANDLE_PREFIXES: Record<string, SocialNetwork> = {
  facebook: 'facebook',
  fb: 'facebook',
  instagram: 'instagram',
  linkedin: 'linkedin',
  twitter: 'x',
  x: 'x',
  youtube: 'youtube',
  tiktok: 'tiktok',
};

/**
 * Handles that belong to the platforms themselves or to the site builders whose footers link them on every
 * hosted site: never the business's own profile.
 */
const PLATFORM_HANDLES = new Set([
  'facebook',
  'fb',
  'meta',
  'instagram',
  'linkedin',
  'twitter',
  'x',
  'twitterapi',
  'youtube',
  'tiktok',
  'google',
  'wix',
  'wixcom',
  'squarespace',
  'shopify',
  'godaddy',
  'weebly',
  'jimdo',
  'wordpress',
  'wordpressdotcom',
  'wordpresscom',
  'webflow',
  'strikingly',
  'hubspot',
  'mailchimp',
  'yola',
  'site123',
  'duda',
  'elementor',
]);

/** First path segments that are the platform's own features, never a profile. */
const FACEBOOK_RESERVED = new Set([
  'sharer',
  'sharer.php',
  'share',
  'share.php',
  'dialog',
  'plugins',
  'tr',
  'login',
  'login.php',
  'l.php',
  'events',
  'groups',
  'photo.php',
  'photo',
  'photos',
  'watch',
  'hashtag',
  'help',
  'policies',
  'privacy',
  'legal',
  'ads',
  'business',
  'settings',
  'story.php',
  'permalink.php',
  'media',
  'video.php',
  'videos',
  'search',
  'home.php',
  'marketplace',
  'gaming',
  'fundraisers',
  'notes',
  'v2.0',
  'recover',
  'reg',
  'r.php',
  'campaign',
  'careers',
  'about',
  'terms',
  'terms.php',
  'privacy.php',
  'badges',
  'directory',
  'find-friends',
  'messages',
  'notifications',
  'bookmarks',
  'places',
  'public',
  'apps',
  'developers',
  'connect',
  'fbml',
  'widgets',
  'images',
  'rsrc.php',
  'ajax',
  'friends',
  'lists',
  'stories',
  'reel',
  'live',
]);
const INSTAGRAM_RESERVED = new Set([
  'p',
  'reel',
  'reels',
  'tv',
  'explore',
  'accounts',
  'stories',
  'about',
  'developer',
  'legal',
  'direct',
  'web',
  'oauth',
  'static',
  'emails',
  'challenge',
  'privacy',
  'terms',
  'press',
  'api',
  'embed.js',
  'share',
]);
const X_RESERVED = new Set([
  'intent',
  'share',
  'home',
  'search',
  'hashtag',
  'i',
  'settings',
  'login',
  'signup',
  'explore',
  'notifications',
  'messages',
  'tos',
  'privacy',
  'about',
  'statuses',
  'widgets',
  'widgets.js',
  'account',
  'oauth',
  'compose',
  'download',
  'following',
  'followers',
  'lists',
  'en',
  'logout',
  'rules',
  'jobs',
  'help',
  'status',
]);
const YOUTUBE_RESERVED = new Set([
  'watch',
  'embed',
  'shorts',
  'playlist',
  'results',
  'feed',
  'redirect',
  't',
  'about',
  'yt',
  'howyoutubeworks',
  'premium',
  'account',
  'v',
  'live',
  'gaming',
  'music',
  'kids',
  'signin',
  'logout',
  'upload',
  'subscription_center',
  'attribution_link',
  'supported_browsers',
  'iframe_api',
  'player_api',
  'sw.js',
  'hashtag',
  'post',
  'create',
]);
const LINKEDIN_KINDS = new Set(['company', 'in', 'school']);

const FACEBOOK_NAME = /^[A-Za-z0-9.-]{2,80}$/;
const INSTAGRAM_NAME = /^[A-Za-z0-9._]{1,30}$/;
const X_NAME = /^[A-Za-z0-9_]{1,15}$/;
const TIKTOK_NAME = /^[A-Za-z0-9._]{2,24}$/;
const YOUTUBE_CHANNEL = /^UC[A-Za-z0-9_-]{22}$/;
const YOUTUBE_NAME = /^[A-Za-z0-9._-]{1,100}$/;
const LINKEDIN_SLUG = /^[^\s/?#]{2,100}$/;

function parseUrl(value: string): URL | null {
  let text = value.trim();
  if (text.startsWith('//')) text = `https:${text}`;
  else if (!/^[a-z][a-z0-9+.-]*:/i.test(text)) text = `https://${text}`;
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * Subdomains that serve the same profiles: `www.`, mobile ones, languages (`de-de.facebook.com`,
 * `uk.linkedin.com`). Others (`developers.facebook.com`, `help.instagram.com`, `business.linkedin.com`) are
 * the platform's own sites, where a path is never a customer's profile.
 */
const PROFILE_SUBDOMAIN = /^(?:www|m|mobile|touch|mbasic|web|[a-z]{2}(?:-[a-z]{2})?)$/;

/** The network of a profile host; null for other hosts and for the platforms' own subdomains. */
function networkOf(host: string): SocialNetwork | null {
  const labels = host.toLowerCase().replace(/\.$/, '').split('.');
  for (let i = 0; i < labels.length - 1; i++) {
    const network = HOSTS[labels.slice(i).join('.')];
    if (network) return i === 0 || (i === 1 && PROFILE_SUBDOMAIN.test(labels[0]!)) ? network : null;
  }
  return null;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function profile(network: SocialNetwork, handle: string): SocialProfile | null {
  if (PLATFORM_HANDLES.has(handle.split('/').pop()!.toLowerCase().replace(/^@/, ''))) return null;
  switch (network) {
    case 'facebook':
      return { network, url: `https://www.facebook.com/${/^\d+$/.test(handle) ? handle : handle.toLowerCase()}` };
    case 'instagram':
      return { network, url: `https://www.instagram.com/${handle.toLowerCase()}` };
    case 'x':
      return { network, url: `https://x.com/${handle.toLowerCase()}` };
    case 'tiktok':
      return { network, url: `https://www.tiktok.com/@${handle.toLowerCase()}` };
    case 'linkedin':
      return { network, url: `https://www.linkedin.com/${handle}` };
    case 'youtube':
      return { network, url: `https://www.youtube.com/${handle}` };
  }
}

function facebook(segments: string[], url: URL): SocialProfile | null {
  const [first, ...rest] = segments;
  if (!first) return null;
  const lower = first.toLowerCase();
  if (lower === 'profile.php') {
    const id = url.searchParams.get('id');
    return id && /^\d+$/.test(id) ? { network: 'facebook', url: `https://www.facebook.com/profile.php?id=${id}` } : null;
  }
  // Newer pages without a username: `/p/<name>-<id>/`, the same profile as `profile.php?id=<id>`.
  if (lower === 'p') {
    const id = /-(\d{5,})$/.exec(rest[0] ?? '')?.[1];
    return id && rest.length === 1 ? { network: 'facebook', url: `https://www.facebook.com/profile.php?id=${id}` } : null;
  }
  // `/pages/<name>/<id>` and `/pages/<category>/<name>/<id>`, `/people/<name>/<id>`: the numeric id is the profile.
  if (lower === 'pages' || lower === 'people' || lower === 'pg') {
    if (lower === 'pg') return rest[0] && FACEBOOK_NAME.test(rest[0]) ? profile('facebook', rest[0]) : null;
    const id = rest.find((s) => /^\d{5,}$/.test(s));
    return id && !rest.some((s) => /^(posts|photos|videos|events)$/i.test(s)) ? profile('facebook', id) : null;
  }
  if (FACEBOOK_RESERVED.has(lower) || !FACEBOOK_NAME.test(first) || /\.php$/i.test(first)) return null;
  // A post, photo or video of the page is not its profile; its tabs (`/about`, `/reviews`) are.
  if (rest.some((s) => /^(posts|photos|videos|permalink|story|events|notes|media_set|photo\.php)$/i.test(s))) return null;
  return profile('facebook', first);
}

function linkedin(segments: string[]): SocialProfile | null {
  const [kind, slug, ...rest] = segments;
  if (!kind || !slug || !LINKEDIN_KINDS.has(kind.toLowerCase()) || !LINKEDIN_SLUG.test(slug)) return null;
  if (rest.some((s) => /^(posts|feed|activity|recent-activity|detail|pulse)$/i.test(s))) return null;
  return profile('linkedin', `${kind.toLowerCase()}/${slug.toLowerCase()}`);
}

function youtube(segments: string[]): SocialProfile | null {
  const [first, second] = segments;
  if (!first) return null;
  if (first.startsWith('@')) return YOUTUBE_NAME.test(first.slice(1)) ? profile('youtube', first.toLowerCase()) : null;
  const lower = first.toLowerCase();
  if (lower === 'channel') return second && YOUTUBE_CHANNEL.test(second) ? profile('youtube', `channel/${second}`) : null;
  if (lower === 'c' || lower === 'user') return second && YOUTUBE_NAME.test(second) ? profile('youtube', `${lower}/${second}`) : null;
  // A legacy custom URL (`youtube.com/wcsmedia`) still names a channel.
  if (segments.length === 1 && !YOUTUBE_RESERVED.has(lower) && YOUTUBE_NAME.test(first) && !first.includes('.'))
    return profile('youtube', first);
  return null;
}

function fromUrl(url: URL): SocialProfile | null {
  const network = networkOf(url.hostname);
  if (!network) return null;
  let path = url.pathname;
  // Old hash-bang addresses (`twitter.com/#!/name`, `facebook.com/?sk=lf#!/pages/…`) carry the path in the fragment.
  if (url.hash.startsWith('#!/')) path = url.hash.slice(2).split('?')[0]!;
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map(decodeSegment);
  switch (network) {
    case 'facebook':
      return facebook(segments, url);
    case 'linkedin':
      return linkedin(segments);
    case 'youtube':
      return youtube(segments);
    case 'instagram': {
      const [first] = segments;
      return first &&
        segments.length <= 2 &&
        !INSTAGRAM_RESERVED.has(first.toLowerCase()) &&
        INSTAGRAM_NAME.test(first) &&
        !/^\.|\.$/.test(first)
        ? profile('instagram', first)
        : null;
    }
    case 'x': {
      const first = segments[0]?.replace(/^@/, '');
      if (!first || X_RESERVED.has(first.toLowerCase()) || !X_NAME.test(first)) return null;
      if (segments.slice(1).some((s) => /^(status|statuses|lists|photo|likes|media)$/i.test(s))) return null;
      return profile('x', first);
    }
    case 'tiktok': {
      const first = segments[0];
      if (!first?.startsWith('@') || segments.length > 1 || !TIKTOK_NAME.test(first.slice(1))) return null;
      return profile('tiktok', first.slice(1));
    }
  }
}

function fromHandle(value: string): SocialProfile | null {
  const match = /^([a-z]+):@?([^\s/:]+)$/i.exec(value.trim());
  if (!match) return null;
  const network = HANDLE_PREFIXES[match[1]!.toLowerCase()];
  const handle = match[2]!;
  if (!network) return null;
  switch (network) {
    case 'facebook':
      return FACEBOOK_NAME.test(handle) ? profile(network, handle) : null;
    case 'instagram':
      return INSTAGRAM_NAME.test(handle) ? profile(network, handle) : null;
    case 'x':
      return X_NAME.test(handle) ? profile(network, handle) : null;
    case 'tiktok':
      return TIKTOK_NAME.test(handle) ? profile(network, handle) : null;
    case 'youtube':
      return YOUTUBE_CHANNEL.test(handle)
        ? profile(network, `channel/${handle}`)
        : YOUTUBE_NAME.test(handle)
          ? profile(network, `@${handle.toLowerCase()}`)
          : null;
    case 'linkedin':
      return null;
  }
}

/**
 * The canonical profile URL of a link (`https://twitter.com/#!/Name` → `https://x.com/name`) or of a handle
 * (`instagram:cafe_x`); null when the value is not a profile: share, intent and plugin links, posts, videos,
 * hashtags, the platform's own pages and site builders' profiles.
 */
export function canonicalSocial(value: string): SocialProfile | null {
  if (/^[a-z]+:@?[^\s/:]+$/i.test(value.trim()) && !/^(https?|mailto|tel):/i.test(value.trim())) return fromHandle(value);
  const url = parseUrl(value);
  return url ? fromUrl(url) : null;
}
