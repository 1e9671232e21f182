// Preloaded (NODE_OPTIONS=--import) into a test's server processes when it measures their memory:
// V8 frees the buffers a stream has passed on only when its external memory has grown by some
// 64 MB since the last collection, so below that the resident size of a process that streams grows
// as much as one that holds everything. Collecting every 100 ms leaves what is live in the figure.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
setInterval(() => collect(), 100).unref();
