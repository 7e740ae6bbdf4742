import type { Config } from '../config.ts';
import { EXIT_FAILURE, EXIT_OK, UsageError, type Io, type ParsedArgs } from './command.ts';
import { passwordPolicyProblem } from '../identity/passwords.ts';
import { USER_USAGE } from './commands.ts';
import { cliCaller, flagValue, openForCommand, passwordArg, requireFlag } from './common.ts';
import { emailField, personName } from '../http/common-schemas.ts';
import { accountEmail } from '../normalize.ts';


/**
 * `contact-ledger user add|passwd`: installation users from the machine itself, e.g. to recover
 * access when every superuser forgot their password. Needs the server stopped (the API does the
 * same while it runs: POST /users, PATCH /users/:userId).
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  const [sub, ...rest] = args.positionals;
  if ((sub !== 'add' && sub !== 'passwd') || rest.length) throw new UsageError(`usage: contact-ledger ${USER_USAGE}`);
  if (sub === 'passwd' && (args.flags.name !== undefined || args.flags.superuser)) throw new UsageError('user passwd takes only --email or --id, and --password');
  const id = typeof args.flags.id === 'string' ? args.flags.id : undefined;
  if (id !== undefined && (sub !== 'passwd' || args.flags.email !== undefined)) throw new UsageError('--id names the user of user passwd, in place of --email');
  const given = id === undefined ? requireFlag(args.flags, 'email', USER_USAGE) : '';
  const email = accountEmail(given);
  // the API's rule: a user nobody could add to an organization (members are added by e-mail) is refused here too
  if (sub === 'add' && !emailField.safeParse(email).success) throw new UsageError(`--email must be an e-mail address, got "${email}"`);
  const password = passwordArg(args.flags.password);
  if (!password) throw new UsageError(`--password is required (${USER_USAGE})`);
  // the policy's refusal is a bad argument (exit 2), as for init: the same command cannot succeed
  const weak = passwordPolicyProblem(password);
  if (weak) throw new UsageError(`--password ${weak}`);
  // the API's rules for a display name (one line: no control characters), checked before the folder is opened
  const name = typeof args.flags.name === 'string' ? flagValue(personName, args.flags.name, 'name') : undefined;
  const rt = await openForCommand(io, config, 'stop it first, or use the API (POST /api/identity/v1/users, PATCH /api/identity/v1/users/:userId)');
  try {
    if (sub === 'add') {
      const u = await rt.identity.users.createUser(cliCaller(), { email, password, superuser: args.flags.superuser === true, ...(name !== undefined ? { name } : {}) });
      io.out(`created ${u.superuser ? 'the superuser' : 'the user'} ${u.email} (${u.id})`);
      return EXIT_OK;
    }
    if (id !== undefined) {
      const byId = rt.identity.repos.users.findUserById(id);
      if (!byId) {
        io.err(`contact-ledger user: no user has the id ${id}`);
        return EXIT_FAILURE;
      }
      await rt.identity.users.updateUser(cliCaller(), byId.id, { password });
      io.out(`set the password of ${byId.email} (${byId.id}); their sessions have ended`);
      return EXIT_OK;
    }
    const u = rt.identity.repos.users.findUserByEmail(email);
    // an account stored as given before a rule of accountEmail's, beside the one of its usual form:
    // the usual one is not the one meant (a reviewer's case: `passwd --email ｂｏｂ@x` reset bob@x's)
    const asStored = [given.trim().toLowerCase(), given.trim().normalize('NFC').toLowerCase()].map((e) => rt.identity.repos.users.findUserByEmail(e)).find((x) => x && x.id !== u?.id);
    if (u && asStored && asStored.id !== u.id) {
      io.err(`contact-ledger user: two accounts answer to ${given.trim()}: ${asStored.id} (stored in an older form, ${asStored.email}${asStored.superuser ? ', a superuser' : ''}) and ${u.id} (${u.email}${u.superuser ? ', a superuser' : ''}); name the one meant with --id`);
      return EXIT_FAILURE;
    }
    if (!u) {
      io.err(`contact-ledger user: no user has the e-mail ${email}`);
      return EXIT_FAILURE;
    }
    await rt.identity.users.updateUser(cliCaller(), u.id, { password });
    io.out(`set the password of ${u.email}; their sessions have ended`);
    return EXIT_OK;
  } finally {
    await rt.close();
  }
}
