import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'clusters',
  summary: '',
  usage: 'Usage: spoolship clusters (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship clusters' is not available yet in this build");
  },
};
export default command;
