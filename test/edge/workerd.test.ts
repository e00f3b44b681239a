/** The edge suite (suite.ts) under workerd, through miniflare. */
import { edgeSuite } from './suite.js';
import { edgeAuthSuite } from './auth-suite.js';
import { workerd } from './runtimes.js';

edgeSuite(workerd);
edgeAuthSuite(workerd);
