import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'send',
  summary: '',
  usage: 'Usage: spoolship send (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship send' is not available yet in this build");
  },
};
export default command;
