# The platform image: every role runs from it (`platform serve <role>`, `platform migrate`, and
# `platform start` by default); see docker-compose.yml.
#
# Two stages: the build stage installs every dependency and bundles the TypeScript into
# dist/platform.mjs (npm run build, scripts/build.ts), so no process compiles at start; the image
# holds the production dependencies, the bundle and the source tree it reads its migrations and
# protos from (at /app, where the bundle was built). It runs as the unprivileged user node, with its
# embedded engines' data (`platform start`) in the volume /data.
#
# Node 22, the current LTS line. The tag is not pinned by digest here: the repository is built
# without access to the image registry. Pin it where you build (docker buildx imagetools inspect
# node:22-bookworm-slim) by writing FROM node:22-bookworm-slim@sha256:<digest>.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# the workspace's manifest (the typed SDK, sdk/): npm ci installs the tree the lock describes, workspaces included
COPY sdk/package.json sdk/
# npm ci refuses a lock without chdb's optional packages for other platforms; npm install reads the same lock.
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund
COPY . .
RUN npm run build

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    PLATFORM_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/
RUN (npm ci --omit=dev --no-audit --no-fund || npm install --omit=dev --no-audit --no-fund) \
    && npm cache clean --force
COPY . .
COPY --from=build /app/dist ./dist
# the one place the process writes: owned by its user, a volume so the data outlives the container
RUN mkdir -p /data && chown node:node /data
VOLUME /data

USER node
EXPOSE 8080
ENTRYPOINT ["node", "--enable-source-maps", "--import", "./dist/instrument.mjs", "dist/platform.mjs"]
CMD ["start"]
