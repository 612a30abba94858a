import { defineConfig } from 'vitest/config';

// Two projects: the in-process suite (files run in parallel) and the
// process-level suite that spawns the built CLI and kills it (serial, so
// kill timings and RSS readings are not distorted by sibling test files).
export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default', './test/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/process/**'],
        },
      },
      {
        extends: true,
        test: {
          name: 'process',
          include: ['test/process/**/*.test.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
});
