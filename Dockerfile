# One image for both roles; the command picks one: `serve` (HTTP: the A2A bindings, streams,
# cards) or `worker` (turns, push deliveries, schedule firings). See docs/deployment.md.
#   docker build -t a2a-gateway .
#   docker run --rm -e A2A_REDIS_URL=redis://redis:6379 -p 8080:8080 a2a-gateway serve
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    A2A_HOST=0.0.0.0 \
    A2A_PORT=8080 \
    A2A_DATA_DIR=/var/lib/a2a-gateway

WORKDIR /app

# Dependencies first, so a code change does not reinstall them. tsx is a runtime dependency
# (the gateway runs its TypeScript sources directly, no build step), so dev dependencies stay out.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY adapters ./adapters
COPY agent-card ./agent-card
COPY queues ./queues
COPY examples ./examples

# Generated keys (card signing, webhook signing, the development issuer) go to dataDir; mount a
# volume there, or give the key files as secrets (cardSigningKeyFile, push.signingKeyFile).
RUN mkdir -p /var/lib/a2a-gateway && chown node:node /var/lib/a2a-gateway
USER node

# 8080: a gateway's HTTP port (A2A_PORT). 8081: a worker's /healthz and /readyz (A2A_HEALTH_PORT).
EXPOSE 8080 8081

# Exec form, so node itself receives SIGTERM: gateways end their streams with a retry hint,
# workers let running turns finish for shutdownGraceMs and hand the rest back, then exit.
ENTRYPOINT ["node", "bin/a2a-gateway.js"]
CMD ["serve"]
