# The platform image: every role runs from it (`node bin/platform.js serve <role>`); see docker-compose.yml.
# TypeScript runs through tsx at start-up, so there is no build step: the image is the source plus
# the production dependencies.
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    PLATFORM_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app

COPY package.json package-lock.json ./
# npm ci refuses a lock without chdb's optional packages for other platforms; npm install reads the same lock.
RUN (npm ci --omit=dev --no-audit --no-fund || npm install --omit=dev --no-audit --no-fund) \
    && npm cache clean --force

COPY . .

USER node
EXPOSE 8080
ENTRYPOINT ["node", "bin/platform.js"]
CMD ["start"]
