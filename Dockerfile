# One image for both roles; the command picks one: `serve` (HTTP: the A2A bindings, streams,
# cards) or `worker` (turns, push deliveries, schedule firings). See docs/deployment.md.
#   docker build -t a2a-gateway .
#   docker run --rm -e A2A_REDIS_URL=redis://redis:6379 -p 8080:8080 a2a-gateway serve
#
# Two stages: the first compiles the TypeScript sources with the dev dependencies (TypeScript);
# the second holds only the production dependencies and the compiled dist/, and runs node on it
# (no tsx, no compiler, no sources in the image).

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts off: `prepare` would build before the sources are copied; the build runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY tools/build ./tools/build
COPY src ./src
COPY adapters ./adapters
COPY agent-card ./agent-card
COPY queues ./queues
RUN npm run build

FROM node:24-bookworm-slim AS runtime

ENV NODE_ENV=production \
    A2A_HOST=0.0.0.0 \
    A2A_PORT=8080 \
    A2A_DATA_DIR=/var/lib/a2a-gateway

WORKDIR /app

# Dependencies first, so a code change does not reinstall them; production ones only.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY --from=build /app/dist ./dist
COPY examples ./examples

# Generated keys (card signing, webhook signing, the development issuer) go to dataDir; mount a
# volume there, or give the key files as secrets (cardSigningKeyFile, push.signingKeyFile;
# `a2a-gateway keys generate` makes them).
RUN mkdir -p /var/lib/a2a-gateway && chown node:node /var/lib/a2a-gateway
USER node

# 8080: a gateway's HTTP port (A2A_PORT). 8081: a worker's /healthz and /readyz (A2A_HEALTH_PORT).
EXPOSE 8080 8081

# The gateway's /readyz, or a worker's on A2A_HEALTH_PORT: a worker needs that variable set to
# be reported healthy. A draining process answers 503, so it turns unhealthy while it stops.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "bin/a2a-gateway.js", "healthcheck"]

# Exec form, so node itself receives SIGTERM: gateways end their streams with a retry hint,
# workers let running turns finish for shutdownGraceMs and hand the rest back, then exit.
ENTRYPOINT ["node", "bin/a2a-gateway.js"]
CMD ["serve"]
