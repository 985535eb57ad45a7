# Baton's server image: compiled JavaScript on Node 20, run as the unprivileged `node` user.
# Build: docker build -t baton .      Run: docker run -e DATABASE_URL=postgres://... -e BATON_ADMIN_TOKEN=... -p 8080:8080 baton
# (docs/deploy.md; deploy/compose.yaml runs PostgreSQL and two servers). No organization is made at
# start (BATON_BOOTSTRAP=off): an operator makes them, e.g. `docker exec <container> baton-server orgs create --name acme`.

# 0. The lockfile and the workspaces' manifests: what both installs below read.
FROM node:20-bookworm-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY core/package.json core/
COPY server/package.json server/
COPY runtime/package.json runtime/
COPY sim/package.json sim/
COPY console/package.json console/

# 1. Build the console (static assets; its build reads the server's OpenAPI document for its types),
#    then the server (it bundles @baton/core; the migrations and the console are copied beside it).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY --from=manifests /app ./
# --ignore-scripts: the sources are not here yet for `prepare` to build.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY core core
COPY server server
COPY runtime runtime
COPY sim sim
COPY console console
RUN npm run build --workspace @baton/core --workspace @baton/console --workspace @baton-coordination/server

# 2. The server's production dependencies only (no TypeScript, test or build tools).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY --from=manifests /app ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --workspace @baton-coordination/server --include-workspace-root=false

# 3. What runs.
FROM node:20-bookworm-slim
# A shared deployment bootstraps nothing: the dev organization and its printed key are for one
# team on one machine (docs/design/0022-one-team-defaults.md). The operator API makes organizations, spaces and keys.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 BATON_DATA_DIR=/data BATON_BOOTSTRAP=off
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/server/package.json server/package.json
COPY --from=build /app/server/bin server/bin
COPY --from=build /app/server/dist server/dist
# `baton-server` on the PATH: the operator commands inside the container (BATON_URL defaults to this server).
RUN mkdir -p /data && chown node:node /data \
  && ln -s /app/server/bin/baton-server.mjs /usr/local/bin/baton-server
USER node
EXPOSE 8080
# Liveness; readiness (/readyz) turns false while a SIGTERM drains.
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "server/dist/main.js"]
