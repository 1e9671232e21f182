/** spec 002: after a reconnect the server replays up to 100 messages from a buffer kept 1 hour */
export const REPLAY_LIMIT = 100;
export const REPLAY_WINDOW_MS = 3600_000;
