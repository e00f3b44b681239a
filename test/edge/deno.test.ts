/** The edge suite (suite.ts) under Deno. */
import { edgeSuite } from './suite.js';
import { edgeAuthSuite } from './auth-suite.js';
import { deno } from './runtimes.js';

edgeSuite(deno);
edgeAuthSuite(deno);
