# syntax=docker/dockerfile:1
# svc controller image. Build: docker build -t svc-controller .  (docs/operations.md)

# --- build: compile TypeScript, then keep only the production dependencies -----------------------
# npm ci also fetches the dev dependency `node` (the npm scripts' runtime, docs/adr/0013-*.md);
# the build runs on that pinned 24.x, and the prune drops it with the other dev dependencies.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# --- runtime -------------------------------------------------------------------------------------
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    SVC_ADDRESS=0.0.0.0:1280 \
    SVC_DATA_DIR=/var/lib/svc
WORKDIR /app
# Application files stay owned by root (read-only for the service); only the data dir is writable.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
RUN mkdir -p /var/lib/svc && chown node:node /var/lib/svc && chmod 0700 /var/lib/svc
USER node
VOLUME /var/lib/svc
EXPOSE 1280
# HTTPS /health/ready, verified with the CA the service writes to $SVC_DATA_DIR/pki/ca.pem
# (or SVC_TLS_CA / SVC_HEALTHCHECK_CA) for the host of SVC_ADVERTISED_ADDRESS (default localhost).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const fs=require('fs'),https=require('https'),e=process.env;const d=e.SVC_DATA_DIR||'/var/lib/svc';const p=(e.SVC_ADDRESS||'0.0.0.0:1280').split(':').pop();const a=e.SVC_ADVERTISED_ADDRESS||'localhost:1280';https.get({host:'127.0.0.1',port:p,path:'/health/ready',ca:fs.readFileSync(e.SVC_HEALTHCHECK_CA||e.SVC_TLS_CA||d+'/pki/ca.pem'),servername:a.slice(0,a.lastIndexOf(':')).replace('[','').replace(']',''),timeout:2000},r=>process.exit(r.statusCode===200?0:1)).on('timeout',()=>process.exit(1)).on('error',()=>process.exit(1))"]
# The service handles SIGTERM itself (graceful shutdown); `docker run --init` adds signal forwarding.
# With the controller's V8 heap options (src/node-heap-options.ts; docs/operations.md, "Memory"):
# command-line flags, which reach only the controller (Node refuses one of them in the environment).
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=100", "dist/src/main.js"]
