import type { FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyStaticOptions } from '@fastify/static';

/**
 * The security headers on every response (@fastify/helmet). The web app is built by Vite into
 * files served from this origin with no inline script, so scripts, styles, fonts, images and
 * connections (the WebSocket included) come from 'self' only. React sets style properties
 * through the DOM, which a CSP does not govern. No page may frame the app (clickjacking), and no
 * address is sent on as a referrer (a session's link stays here).
 */
export const SECURITY_HEADERS: FastifyHelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:', 'blob:'],
      fontSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      objectSrc: ["'none'"],
      baseUri: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      // Not upgrade-insecure-requests: a server reached over plain HTTP on a private network must
      // still load its own files.
    },
  },
  referrerPolicy: { policy: 'no-referrer' },
  // HSTS belongs to whoever terminates TLS (the reverse proxy); browsers ignore it over HTTP.
  strictTransportSecurity: false,
  crossOriginEmbedderPolicy: false,
};

/** A file Vite named by its content's hash (`assets/index-BEWx92gI.js`, or its `.br`/`.gz` copy). */
const HASHED_ASSET = /[\\/]assets[\\/][^\\/]+-[\w-]{8}\.[a-z]+(\.br|\.gz)?$/;

/** How long a browser keeps a file whose name holds its content's hash: a year, never asked again. */
const HASHED_ASSET_CACHE = 'public, max-age=31536000, immutable';

/**
 * How the web app's files are served: Vite names its built files (under /assets/) by their content's
 * hash, so they are cached as immutable; every other file (index.html, the favicon) is checked
 * again each time, so a new version shows on the next load. The build writes Brotli and gzip
 * copies beside each file (scripts/build.mjs); the one the browser accepts is sent.
 */
export function webAppFiles(root: string): FastifyStaticOptions {
  return {
    root,
    prefix: '/',
    wildcard: false,
    index: ['index.html'],
    preCompressed: true,
    cacheControl: false,
    setHeaders: (reply, path) => {
      reply.header('cache-control', HASHED_ASSET.test(path) ? HASHED_ASSET_CACHE : 'no-cache');
    },
  };
}
