# Stepwise's image: the web app and the server built here, run on Node with production
# dependencies only (no esbuild, tsx or PGlite), as a non-root user, its data in a volume.
#   docker build -t stepwise .        (or: buildah build --format docker -t stepwise .)
#   docker run -p 8787:8787 -e AUTH_TOKEN=… -e LLM_PROVIDER=demo -v stepwise-data:/data stepwise
# BASE_IMAGE: any Debian-based image with Node.js 20.19 or later (and npm) on its PATH.
ARG BASE_IMAGE=node:22-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /src
ENV CI=true npm_config_update_notifier=false
# The manifests first, so the dependencies' layer is reused while only the sources change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY backend/package.json backend/
COPY frontend/package.json frontend/
COPY shared-types/package.json shared-types/
COPY tests/package.json tests/
COPY bench/package.json bench/
RUN npx -y pnpm@10 install --frozen-lockfile --filter @stepwise/backend... --filter @stepwise/frontend...
COPY . .
RUN node scripts/build.mjs && node scripts/build-server.mjs \
 # The server's packages alone: production dependencies, without the optional PGlite (only an
 # earlier release's data folder needs it, to be moved into SQLite).
 && npx -y pnpm@10 deploy --legacy --prod --filter @stepwise/backend /out \
 && rm -rf /out/node_modules/@electric-sql /out/node_modules/.pnpm/@electric-sql+pglite@*

FROM ${BASE_IMAGE}
WORKDIR /app
RUN groupadd --system stepwise && useradd --system --gid stepwise --home-dir /app --shell /usr/sbin/nologin stepwise \
 && mkdir /data && chown stepwise:stepwise /data
# The layout of a checkout, so the server finds prompts/ and frontend/dist/ beside backend/dist/.
COPY --from=build /src/package.json /src/stepwise.schema.json /src/stepwise.config.example.json ./
COPY --from=build /src/backend/package.json backend/
COPY --from=build /out/node_modules backend/node_modules/
COPY --from=build /src/backend/dist backend/dist/
COPY --from=build /src/frontend/dist frontend/dist/
COPY --from=build /src/prompts prompts/
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8787 DATA_DIR=/data SHUTDOWN_DRAIN_MS=0
VOLUME /data
USER stepwise
EXPOSE 8787
# The liveness probe; orchestrators that route traffic use /api/health/ready.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/api/health/live`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# Arguments go to the server: `docker run --rm stepwise --help`.
ENTRYPOINT ["node", "backend/dist/main.js"]
