import type { Config } from '../config.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, type Io, type ParsedArgs } from './command.ts';
import { AppError } from '../errors.ts';
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
  // the API's rules for a display name (one line: no control characters), checked before the folder is opened
  const name = typeof args.flags.name === 'string' ? flagValue(personName, args.flags.name, 'name') : undefined;
  // the policy's refusal is a bad argument (exit 2), as for init: the same command cannot succeed
  // (for `passwd`, the account's stored name is looked at once it is found, below)
  const weak = passwordPolicyProblem(password, { email, name });
  if (weak) throw new UsageError(`--password ${weak}`);
  /** The policy's refusal of the account's own identifiers, known only once the account is read: exit 2 too. */
  const asUsage = (err: unknown): never => {
    if (err instanceof AppError && err.status === 422 && err.errors.some((e) => e.path === 'password')) throw new UsageError(`--password ${err.errors.find((e) => e.path === 'password')!.message}`);
    throw err;
  };
  const rt = await openForCommand(io, config, 'stop it first, or use the API (POST /api/identity/v1/users, PATCH /api/identity/v1/users/:userId)');
  try {
    if (sub === 'add') {
      // the first account is a superuser: a start makes one only while there is no account at all,
      // so a first one without the right left an installation nobody could administer (a reviewer's
      // case: a first start that could not listen makes none, and `user add` came next)
      if (args.flags.superuser !== true && rt.identity.repos.users.countUsers() === 0) {
        throw new UsageError('this installation has no user yet: make the first one a superuser (--superuser), or use init, or start the server, which makes one and prints its password');
      }
      const u = await rt.identity.users.createUser(cliCaller(), { email, password, superuser: args.flags.superuser === true, ...(name !== undefined ? { name } : {}) }).catch((err: unknown) => {
        // the same command cannot succeed (exit 2), and what to do instead is known
        if (err instanceof AppError && err.code === 'email_taken') throw new UsageError(`a user with the e-mail ${email} already exists; to set their password: contact-ledger user passwd --email ${email} --password -`);
        throw err;
      });
      io.out(`created ${u.superuser ? 'the superuser' : 'the user'} ${u.email} (${u.id})`);
      return EXIT_OK;
    }
    if (id !== undefined) {
      const byId = rt.identity.repos.users.findUserById(id);
      if (!byId) {
        io.err(`contact-ledger user: no user has the id ${id}`);
        return EXIT_USAGE;
      }
      await rt.identity.users.updateUser(cliCaller(), byId.id, { password }).catch(asUsage);
      io.out(`set the password of ${byId.email} (${byId.id}); their sessions have ended`);
      return EXIT_OK;
    }
    const u = rt.identity.repos.users.findUserByEmail(email);
    // Accounts stored in an older form of the address beside the one of its usual form (migrations
    // 0040, 0046) cannot sign in: sign-in finds the usual one (docs/decisions.md). Given in such a
    // form, the older account is the one meant, and setting its password would not let it in: refused,
    // saying so (a reviewer's case: `passwd --email ｂｏｂ@x` reset bob@x's); given as the usual
    // form, the usual account's is set, and the older ones are named (an upgrade tester's only
    // superuser was one of them, and the reset reached a user without its rights).
    const older = u ? rt.identity.users.olderFormsOf(email) : [];
    const named = (x: { id: string; email: string; superuser: boolean }) => `${x.id} (${x.email}${x.superuser ? ', a superuser' : ''})`;
    const typed = [given.trim().toLowerCase(), given.trim().normalize('NFC').toLowerCase()];
    const meant = older.find((x) => typed.includes(x.email));
    const superuserAdvice = older.some((x) => x.superuser) ? '; a superuser is needed: make one with contact-ledger user add --superuser' : '';
    if (u && meant) {
      io.err(`contact-ledger user: ${named(meant)} is stored in an older form of ${u.email} and cannot sign in: sign-in finds ${named(u)}. To set that account's password, give --email ${u.email}${superuserAdvice}`);
      return EXIT_FAILURE;
    }
    if (!u) {
      io.err(`contact-ledger user: no user has the e-mail ${email}; to add one: contact-ledger user add --email ${email} --password -`);
      return EXIT_USAGE;
    }
    await rt.identity.users.updateUser(cliCaller(), u.id, { password }).catch(asUsage);
    io.out(`set the password of ${u.email}${u.superuser ? ' (a superuser)' : ''}; their sessions have ended`);
    if (older.length) io.err(`contact-ledger user: note: ${older.map(named).join(', ')} ${older.length === 1 ? 'is' : 'are'} stored in an older form of this address and cannot sign in (docs/decisions.md)${superuserAdvice}`);
    return EXIT_OK;
  } finally {
    await rt.close();
  }
}
