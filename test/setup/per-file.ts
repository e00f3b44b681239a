/**
 * Runs before every end-to-end test file. Files share their worker's modules (`isolate: false`),
 * so the schema cross-check collector starts empty for each file: its banner and its
 * cross-check test speak of that file's frames alone.
 */
import { beforeAll } from 'vitest';
import { resetEmitted } from '../support/spec-validator.js';

beforeAll(() => {
  resetEmitted();
});
