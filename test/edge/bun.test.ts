/** The edge suite (suite.ts) under Bun. */
import { edgeSuite } from './suite.js';
import { edgeAuthSuite } from './auth-suite.js';
import { bun } from './runtimes.js';

edgeSuite(bun);
edgeAuthSuite(bun);
