import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, ID, listAll, type Role } from '../api.ts';
import { Async, Confirm, Dialog, Email, ErrorBox, Field, fieldErrors, FormError, Notice, PageHead, Time, useAction, useChoice, useRequest, useRole, useSession, asApiError } from '../ui.tsx';

interface Member {
  userId: string;
  email: string;
  name: string;
  role: Role;
  /** Disabled by a superuser: reaches nothing, and an admin who does not count as one. */
  disabled: boolean;
  addedAt: string;
}
const ROLES: { role: Role; text: string }[] = [
  { role: 'viewer', text: 'sees ledgers, contacts, changes and imports; downloads CSV' },
  { role: 'editor', text: 'also creates and renames ledgers, imports and deletes contacts' },
  { role: 'admin', text: 'also manages the team, service accounts, webhooks and deletes ledgers' },
];

/**
 * The API's "last admin" refusal names the organization by its name and id, for API clients that
 * act on many; here the organization is the one on the screen, so it is said in words.
 */
function plain(e: unknown, m: Member, orgName: string | undefined): ApiError {
  const err = asApiError(e);
  if (err.code !== 'last_admin') return err;
  const who = m.name || m.email;
  return new ApiError(err.status, err.code, `${who} is the last admin of ${orgName ?? 'this organization'} who can sign in (a disabled admin does not count): make another member an admin first.`, err.errors);
}

/**
 * A member's role, changed when the choice is made (useChoice): arrow keys moving through the
 * roles changed the member's rights at each step, from viewer up to admin (a tester's case). A
 * role moved to with the keyboard waits for Enter or "Change role"; one refused goes back.
 */
function RoleSelect(props: { member: Member; change: (m: Member, r: Role) => Promise<boolean> }) {
  const m = props.member;
  const hint = `role-hint-${m.userId}`;
  const [busy, setBusy] = useState(false);
  const { pending, select, commit, reset } = useChoice(m.role, (r) => {
    if (r === m.role || busy) return;
    setBusy(true);
    void props.change(m, r as Role).then((changed) => {
      if (changed) return; // busy until the list shows the new role
      setBusy(false);
      reset();
    });
  });
  useEffect(() => setBusy(false), [m.role]);
  return (
    <span class="role-choice">
      <select aria-label={`Role of ${m.email}`} {...select} aria-describedby={pending ? hint : undefined}>
        {ROLES.map((r) => (
          <option key={r.role} value={r.role}>
            {r.role}
          </option>
        ))}
      </select>
      {pending && !busy && (
        <>
          <button type="button" class="secondary small" onClick={commit}>
            Change role
          </button>
          <span id={hint} class="visually-hidden">
            Press Enter or Change role to make {m.email} {select.value}.
          </span>
        </>
      )}
    </span>
  );
}

/** Members and roles: add, change role, remove; the last admin stays (the API answers 409). */
export function Team(props: { orgId: string }) {
  const { orgId } = props;
  const role = useRole(orgId);
  const session = useSession();
  const me = session.principal.user;
  const orgName = session.orgs.find((o) => o.id === orgId)?.name;
  const isAdmin = role === 'admin';
  const path = `${ID}/orgs/${orgId}/members`;
  const req = useRequest(async (signal) => ({ members: (await listAll<Member>(path, 'members', { signal })).items }), [path]);
  const [adding, setAdding] = useState(false);
  const [removing, setRemoving] = useState<Member>();
  const [notice, setNotice] = useState<string>();
  const [rowError, setRowError] = useState<ApiError>();
  const changeRole = async (m: Member, r: Role): Promise<boolean> => {
    setRowError(undefined);
    setNotice(undefined);
    let changed = false;
    try {
      await api('PATCH', `${path}/${m.userId}`, { body: { role: r } });
      // a superuser is an admin in every organization whatever their member role: "is now viewer"
      // alone read as a loss of rights that the header and the controls then did not show (a tester's case)
      const own = m.userId === me?.id && me.superuser && r !== 'admin';
      setNotice(`${m.name || m.email} is now ${r}.${own ? ` As a superuser you keep an admin's rights here and in every organization, whatever your member role: what you may do does not change.` : ''}`);
      changed = true;
      if (m.userId === me?.id) void session.reloadOrgs(); // their own role: the controls follow it at once
    } catch (e) {
      setRowError(plain(e, m, orgName));
    }
    req.reload();
    return changed;
  };
  return (
    <>
      <PageHead title="Team" sub="Who can use this organization, and what they may do.">
        {isAdmin && (
          <button type="button" onClick={() => setAdding(true)}>
            Add member
          </button>
        )}
      </PageHead>
      <details class="roles-help">
        <summary>What the roles allow</summary>
        <ul>
          {ROLES.map((r) => (
            <li key={r.role}>
              <strong>{r.role}</strong>: {r.text}
            </li>
          ))}
        </ul>
      </details>
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      {rowError && <ErrorBox error={rowError} title="The role was not changed." />}
      <Async req={req} label="Loading members…" empty={(d) => d.members.length === 0} emptyText="No members yet.">
        {(d) => (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Members">
            <table class="members stack">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">E-mail</th>
                  <th scope="col">Role</th>
                  <th scope="col">Added</th>
                  {isAdmin && (
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {d.members.map((m) => (
                  <tr key={m.userId}>
                    <th scope="row">
                      {m.name || '—'}
                      {m.userId === me?.id && <span class="badge">you</span>}
                      {m.disabled && (
                        <span class="badge" title="Disabled by a superuser: signs in nowhere, and as an admin does not count">
                          disabled
                        </span>
                      )}
                    </th>
                    <td class="email" data-label="E-mail">
                      <Email address={m.email} />
                    </td>
                    <td data-label="Role">
                      {isAdmin ? (
                        <RoleSelect member={m} change={changeRole} />
                      ) : (
                        m.role
                      )}
                    </td>
                    <td data-label="Added">
                      <Time iso={m.addedAt} dateOnly />
                    </td>
                    {isAdmin && (
                      <td class="cell-actions">
                        <button type="button" class="danger-outline small" aria-label={`Remove ${m.email}`} onClick={() => setRemoving(m)}>
                          Remove
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Async>
      {adding && (
        <AddMember
          orgId={orgId}
          onClose={() => setAdding(false)}
          onDone={(m) => {
            setAdding(false);
            setNotice(`Added ${m.email} as ${m.role}.`);
            req.reload();
          }}
        />
      )}
      {removing && (
        <Confirm
          title={`Remove ${removing.name || removing.email}?`}
          confirm="Remove member"
          danger
          onClose={() => setRemoving(undefined)}
          onConfirm={async () => {
            await api('DELETE', `${path}/${removing.userId}`).catch((e: unknown) => {
              throw plain(e, removing, orgName);
            });
            setNotice(`Removed ${removing.email}.`);
            if (removing.userId === me?.id) void session.reloadOrgs();
            req.reload();
            return true;
          }}
        >
          <p>
            {removing.email} loses access to this organization at once. Their user account stays; they can be added again.
          </p>
        </Confirm>
      )}
    </>
  );
}

function AddMember(props: { orgId: string; onClose: () => void; onDone: (m: Member) => void }) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [password, setPassword] = useState('');
  const act = useAction(async () => {
    const body = { email: email.trim(), role, ...(name.trim() ? { name: name.trim() } : {}), ...(password ? { password } : {}) };
    props.onDone(await api<Member>('POST', `${ID}/orgs/${props.orgId}/members`, { body }));
  });
  const fields = ['email', 'role', 'name', 'password'] as const;
  const err = fieldErrors(act.error, fields);
  return (
    <Dialog title="Add a member" onClose={props.onClose} busy={act.busy}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <Field label="E-mail" error={err.email}>
          {(id, d, invalid) => <input id={id} type="email" required autoFocus aria-describedby={d} aria-invalid={invalid} value={email} onInput={(e) => act.edited(setEmail)(e.currentTarget.value)} />}
        </Field>
        <Field label="Role" error={err.role}>
          {(id, d, invalid) => (
            <select id={id} aria-describedby={d} aria-invalid={invalid} value={role} onChange={(e) => act.edited(setRole)(e.currentTarget.value as Role)}>
              {ROLES.map((r) => (
                <option key={r.role} value={r.role}>
                  {r.role} — {r.text}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Name (optional)" error={err.name}>
          {(id, d, invalid) => <input id={id} aria-describedby={d} aria-invalid={invalid} value={name} onInput={(e) => act.edited(setName)(e.currentTarget.value)} />}
        </Field>
        <Field label="Initial password (for a new user)" hint="Leave empty to add someone who already has an account. For a new user, give a password of at least 8 characters and tell it to them; they change it on their Account page (their name at the top of every page)." error={err.password}>
          {(id, d, invalid) => <input id={id} type="password" autocomplete="new-password" minLength={8} aria-describedby={d} aria-invalid={invalid} value={password} onInput={(e) => act.edited(setPassword)(e.currentTarget.value)} />}
        </Field>
        <FormError error={act.error} fields={fields} />
        <div class="actions">
          <button type="button" class="secondary" disabled={act.busy} onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" disabled={act.busy}>
            {act.busy ? 'Adding…' : 'Add member'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
