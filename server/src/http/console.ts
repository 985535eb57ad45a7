import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { BatonError } from '@baton/core';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { AppDeps } from './deps';
import { consoleSession } from './console-session';

/**
 * The operator console (docs/console.md): the static build of the `console` workspace at
 * /console, and the one route it needs beyond /v1 (its key's spaces and permissions). Hidden from
 * the OpenAPI document: it is a page, not part of the API.
 */

/**
 * No inline script or style, no other origin, no framing: the console's JavaScript holds an API
 * key in session storage, so nothing but its own hashed files may run on the page.
 */
export const consoleCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Where the built console is: the `@baton/console` workspace's dist/ in a checkout (so a console
 * rebuilt alone is served as it is), else the copy the server's build puts beside its own bundle
 * (dist/console/: the installed package has no workspace).
 */
export function consoleDistDir(): string | undefined {
  return [workspaceConsoleDir(), fileURLToPath(new URL('./console/', import.meta.url))].find(
    (dir): dir is string => dir !== undefined && existsSync(join(dir, 'index.html')),
  );
}

function workspaceConsoleDir(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@baton/console/package.json')), 'dist');
  } catch {
    return undefined;
  }
}

export function consoleRoutes(deps: AppDeps, distDir: string | undefined = consoleDistDir()): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    app.addHook('onSend', async (_request, reply) => {
      reply.header('Content-Security-Policy', consoleCsp);
      reply.header('X-Content-Type-Options', 'nosniff');
      reply.header('Referrer-Policy', 'no-referrer');
    });

    app.get('/console/session', { schema: { hide: true } }, async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return consoleSession(deps.store, request.headers.authorization);
    });

    if (!distDir) {
      const notBuilt = async (): Promise<never> => {
        throw new BatonError('NOT_FOUND', 'the console is not built: run npm run build (docs/console.md)');
      };
      app.get('/console', { schema: { hide: true } }, notBuilt);
      app.get('/console/*', { schema: { hide: true } }, notBuilt);
      return;
    }

    // Read once: the page is a few hundred bytes and every console path answers it.
    const index = readFileSync(join(distDir, 'index.html'));
    const page = async (_request: unknown, reply: import('fastify').FastifyReply) =>
      // no-cache: a new build's page (naming new hashed files) is seen at the next load.
      reply.header('Cache-Control', 'no-cache').type('text/html; charset=utf-8').send(index);
    await app.register(fastifyStatic, {
      root: join(distDir, 'assets'),
      prefix: '/console/assets/',
      decorateReply: false,
      index: false,
      // Their names carry a content hash: a changed file is a new URL.
      immutable: true,
      maxAge: '365d',
    });
    app.get('/console', { schema: { hide: true } }, page);
    // The console routes in the browser (/console/tasks/…); a reload of any of them gets the page.
    app.get('/console/*', { schema: { hide: true } }, page);
  };
}
