import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'check-config',
  summary: '',
  usage: 'Usage: spoolship check-config (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship check-config' is not available yet in this build");
  },
};
export default command;
