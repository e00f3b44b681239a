/** The edge suite (suite.ts) under Bun. */
import { edgeSuite } from './suite.js';
import { bun } from './runtimes.js';

edgeSuite(bun);
