import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { info } from './document';

/**
 * The rendered reference at /docs (swagger-ui): Baton's title, mark and favicon instead of
 * Fastify's, operations listed in the document's order (the user's routes first, the operator's
 * last), ids shown so a reader finds the method a generated client has.
 */

const mark = (fill: string): Buffer =>
  Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="132" height="32" viewBox="0 0 132 32"><rect x="2" y="13" width="28" height="6" rx="3" transform="rotate(-35 16 16)" fill="${fill}"/><text x="38" y="24" font-family="Helvetica, Arial, sans-serif" font-size="22" font-weight="700" fill="${fill}">Baton</text></svg>`,
  );
const favicon = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f2937"/><rect x="4" y="13" width="24" height="6" rx="3" transform="rotate(-35 16 16)" fill="#f59e0b"/></svg>',
);

export const referencePage: FastifySwaggerUiOptions = {
  routePrefix: '/docs',
  logo: { type: 'image/svg+xml', content: mark('#ffffff'), href: '/docs', target: '_self' },
  theme: {
    title: `${info.title} reference`,
    favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: favicon }],
  },
  uiConfig: {
    docExpansion: 'list',
    deepLinking: true,
    displayOperationId: true,
    defaultModelsExpandDepth: -1,
    filter: true,
    persistAuthorization: true,
  },
};
