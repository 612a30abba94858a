import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'run',
  summary: '',
  usage: 'Usage: spoolship run (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship run' is not available yet in this build");
  },
};
export default command;
