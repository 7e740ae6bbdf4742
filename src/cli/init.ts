import { loadConfig, type Config } from '../config.ts';
import type { Caller } from '../identity/model.ts';
import { EXIT_OK, EXIT_USAGE, refuseArguments, UsageError, type Io, type ParsedArgs } from './command.ts';
import { passwordPolicyProblem } from '../identity/passwords.ts';
import { flagValue, openForCommand, passwordArg } from './common.ts';
import { emailField, text } from '../http/common-schemas.ts';

/**
 * `contact-ledger init --email --password [--org NAME]`: sets up a new installation with the
 * superuser of your choice (instead of the generated one of the first start), and optionally its
 * first organization with that user as admin.
 */
export async function run(args: ParsedArgs, io: Io, base: Config): Promise<number> {
  refuseArguments(args);
  const email = (args.flags.email as string | undefined) ?? base.adminEmail;
  const password = passwordArg(args.flags.password) ?? base.adminPassword;
  if (!email || !password) throw new UsageError('--email and --password are required (or CONTACT_LEDGER_ADMIN_EMAIL and CONTACT_LEDGER_ADMIN_PASSWORD)');
  // named as given: an --email was judged as CONTACT_LEDGER_ADMIN_EMAIL (an operator tester's case), and by a new account's rules, as `user add`
  if (args.flags.email !== undefined && !emailField.safeParse(email).success) throw new UsageError(`--email must be an e-mail address, got "${email}"`);
  // a password given as --password is judged under that name (it is passed on below as CONTACT_LEDGER_ADMIN_PASSWORD)
  const weak = args.flags.password !== undefined ? passwordPolicyProblem(password, { email }) : undefined;
  if (weak) throw new UsageError(`--password ${weak}`);
  const orgFlag = args.flags.org as string | undefined;
  if (orgFlag !== undefined && orgFlag.trim() === '') throw new UsageError('--org needs a name');
  // the API's rules for an organization's name (trimmed, one line), checked before anything is made
  const org = orgFlag === undefined ? undefined : flagValue(text(256), orgFlag, 'org');
  // The e-mail goes through the same validation as CONTACT_LEDGER_ADMIN_EMAIL.
  const config = loadConfig({ ...io.env, CONTACT_LEDGER_ADMIN_EMAIL: email, CONTACT_LEDGER_ADMIN_PASSWORD: password }, { ...args.config, 'admin-email': undefined, 'admin-password': undefined }, { serving: false });
  const rt = await openForCommand(io, config, 'init sets up a new installation only; use "contact-ledger user add" or the API', { bootstrap: true });
  try {
    if (!rt.bootstrap) {
      // run again it fails again (as user add of an existing user): exit 2
      io.err(`contact-ledger init: ${config.dataDir} is already set up (it has users); use "contact-ledger user add" to add one`);
      return EXIT_USAGE;
    }
    const user = rt.identity.repos.users.findUserByEmail(rt.bootstrap.email)!;
    io.out(`created the superuser ${user.email} (${user.id}) in ${config.dataDir}`);
    if (org !== undefined) {
      const by: Caller = { actor: { type: 'user', id: user.id, email: user.email, name: user.name, superuser: true, sessionId: '' }, requestId: `cli-${process.pid}`, ip: 'local' };
      const created = await rt.identity.orgs.createOrg(by, { name: org });
      io.out(`created the organization "${created.name}" (${created.id}) with ${user.email} as its admin`);
    }
    return EXIT_OK;
  } finally {
    await rt.close();
  }
}
