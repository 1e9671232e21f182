import { clusterSuite } from '../support/cluster-suite';

// the embedded default: the workers share the primary's cache over IPC
clusterSuite('on its embedded engines (no Redis)', {});
