import { UsageError } from '../../errors.js';
import type { Command } from '../command.js';

const command: Command = {
  name: 'emulator',
  summary: '',
  usage: 'Usage: spoolship emulator (not available yet in this build)',
  async run() {
    throw new UsageError("'spoolship emulator' is not available yet in this build");
  },
};
export default command;
