import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'status',
  summary: '',
  usage: 'Usage: spoolship status (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship status' is not available yet in this build");
  },
};
export default command;
