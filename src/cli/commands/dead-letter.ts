import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'dead-letter',
  summary: '',
  usage: 'Usage: spoolship dead-letter (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship dead-letter' is not available yet in this build");
  },
};
export default command;
