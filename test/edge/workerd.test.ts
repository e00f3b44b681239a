/** The edge suite (suite.ts) under workerd, through miniflare. */
import { edgeSuite } from './suite.js';
import { workerd } from './runtimes.js';

edgeSuite(workerd);
