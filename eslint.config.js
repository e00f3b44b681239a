import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * src/core is runtime-neutral (web standards plus portable libraries): nothing there may reach
 * Node builtins, Node-only packages, or the Node runtime and CLI layers. test/unit/layering.test.ts
 * checks the same over the whole import graph.
 */
const NODE_ONLY = 'src/core is runtime-neutral: Node-specific code belongs in src/node, wired in at the composition root';
const coreBoundary = {
  files: ['src/core/**/*.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: builtinModules.map((name) => ({ name, message: NODE_ONLY })),
        patterns: [
          { group: ['node:*'], message: NODE_ONLY },
          {
            group: [
              'undici',
              'undici/*',
              '@hono/node-server',
              '@hono/node-server/*',
              'pino',
              'pino/*',
              'pino-*',
              'prom-client',
              'prom-client/*',
            ],
            message: NODE_ONLY,
          },
          { regex: '^\\.\\.?/(?:\\.\\./)*(?:node|cli)(?:/|$)', message: NODE_ONLY },
        ],
      },
    ],
    'no-restricted-globals': [
      'error',
      ...['Buffer', 'process', 'setImmediate', 'clearImmediate', 'global', '__dirname', '__filename', 'require'].map((name) => ({
        name,
        message: NODE_ONLY,
      })),
    ],
  },
};

/**
 * src/edge runs on workerd, Deno and Bun: it builds on the core, never on the Node runtime, and
 * of Node's builtins uses only what workerd's `nodejs_compat` provides and the edge needs
 * (AsyncLocalStorage, src/edge/request-scope.ts).
 */
const EDGE_ONLY = 'src/edge runs on workerd, Deno and Bun: no Node runtime code or Node-only packages';
const edgeBoundary = {
  files: ['src/edge/**/*.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: builtinModules.filter((name) => name !== 'async_hooks').map((name) => ({ name, message: EDGE_ONLY })),
        patterns: [
          { regex: '^node:(?!async_hooks$)', message: EDGE_ONLY },
          {
            group: [
              'undici',
              'undici/*',
              '@hono/node-server',
              '@hono/node-server/*',
              'pino',
              'pino/*',
              'pino-*',
              'prom-client',
              'prom-client/*',
            ],
            message: EDGE_ONLY,
          },
          { regex: '^\\.\\.?/(?:\\.\\./)*(?:node|cli)(?:/|$)', message: EDGE_ONLY },
        ],
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist-*/**', 'node_modules/**', 'coverage/**', 'bench/scratch/**', 'bench/profiles/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        crypto: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  coreBoundary,
  edgeBoundary,
);
