import { useState } from 'preact/hooks';
import { api, ID } from '../api.ts';
import { navigate } from '../router.ts';
import { Field, fieldErrors, FormError, PageHead, useAction, useMounted, useSession } from '../ui.tsx';

/**
 * Superusers create organizations; the creator (or the named admin) becomes its admin. The first
 * admin may be someone without an account yet: with a name and an initial password the API
 * creates the user (`adminName`, `adminPassword`), as the Team page's "Add member" does. Those
 * two fields show once an e-mail is typed. Editing a field takes a refusal away (useAction's
 * `edited`, as the dialog forms do): "give a password to create one" stayed under the password
 * typed next, until the next Create (a reviewer's case).
 */
export function NewOrg() {
  const s = useSession();
  const [name, setName] = useState('');
  const [adminEmail, setAdminEmail] = useState('');
  const [adminName, setAdminName] = useState('');
  const [adminPassword, setAdminPassword] = useState('');
  const here = useMounted();
  const act = useAction(async () => {
    const email = adminEmail.trim();
    const body = { name: name.trim(), ...(email ? { adminEmail: email, ...(adminName.trim() ? { adminName: adminName.trim() } : {}), ...(adminPassword ? { adminPassword } : {}) } : {}) };
    const org = await api<{ id: string }>('POST', `${ID}/orgs`, { body });
    await s.reloadOrgs();
    // not when this page was left while the organization was created: the page gone to stays
    if (here.current) navigate(`/orgs/${org.id}/ledgers`);
  });
  const fields = ['name', 'adminEmail', 'adminName', 'adminPassword'] as const;
  const err = fieldErrors(act.error, fields);
  // the page's heading also when it is refused (a screen-reader user navigates by headings: a web tester's case)
  if (!s.principal.user?.superuser)
    return (
      <>
        <PageHead title="New organization" />
        <p class="state error">Only a superuser can create organizations.</p>
      </>
    );
  return (
    <>
      <PageHead title="New organization" sub="An organization holds ledgers, a team with roles, service accounts and webhooks." />
      <form
        class="card form"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <Field label="Name" error={err.name}>
          {(id, d, invalid) => <input id={id} required maxLength={256} aria-describedby={d} aria-invalid={invalid} value={name} onInput={(e) => act.edited(setName)(e.currentTarget.value)} />}
        </Field>
        <Field label="First admin's e-mail (optional)" hint="Who becomes its admin. Leave empty to be its admin yourself; add the team afterwards." error={err.adminEmail}>
          {(id, d, invalid) => <input id={id} type="email" aria-describedby={d} aria-invalid={invalid} value={adminEmail} onInput={(e) => act.edited(setAdminEmail)(e.currentTarget.value)} />}
        </Field>
        {adminEmail.trim() && (
          <>
            <Field label="First admin's initial password (for a new user)" hint="Leave empty when they already have an account. For someone new, give a password of at least 8 characters and tell it to them; they change it on their Account page (their name at the top of every page)." error={err.adminPassword}>
              {(id, d, invalid) => <input id={id} type="password" autocomplete="new-password" minLength={8} aria-describedby={d} aria-invalid={invalid} value={adminPassword} onInput={(e) => act.edited(setAdminPassword)(e.currentTarget.value)} />}
            </Field>
            <Field label="First admin's name (optional, for a new user)" error={err.adminName}>
              {(id, d, invalid) => <input id={id} maxLength={256} aria-describedby={d} aria-invalid={invalid} value={adminName} onInput={(e) => act.edited(setAdminName)(e.currentTarget.value)} />}
            </Field>
          </>
        )}
        <FormError error={act.error} fields={fields} />
        <div class="actions">
          <button type="submit" disabled={act.busy}>
            {act.busy ? 'Creating…' : 'Create organization'}
          </button>
        </div>
      </form>
    </>
  );
}
