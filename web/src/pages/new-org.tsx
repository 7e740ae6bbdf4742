import { useState } from 'preact/hooks';
import { api, ID } from '../api.ts';
import { navigate } from '../router.ts';
import { Field, FormError, PageHead, useAction, useSession } from '../ui.tsx';

/** Superusers create organizations; the creator (or the named admin) becomes its admin. */
export function NewOrg() {
  const s = useSession();
  const [name, setName] = useState('');
  const [adminEmail, setAdminEmail] = useState('');
  const act = useAction(async () => {
    const org = await api<{ id: string }>('POST', `${ID}/orgs`, { body: { name: name.trim(), ...(adminEmail.trim() ? { adminEmail: adminEmail.trim() } : {}) } });
    await s.reloadOrgs();
    navigate(`/orgs/${org.id}/ledgers`);
  });
  if (!s.principal.user?.superuser) return <p class="state error">Only a superuser can create organizations.</p>;
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
        <Field label="Name">{(id) => <input id={id} required maxLength={256} value={name} onInput={(e) => setName(e.currentTarget.value)} />}</Field>
        <Field label="First admin's e-mail (optional)" hint="An existing user who becomes its admin. Leave empty to be its admin yourself; add the team afterwards.">
          {(id, d) => <input id={id} type="email" aria-describedby={d} value={adminEmail} onInput={(e) => setAdminEmail(e.currentTarget.value)} />}
        </Field>
        <FormError error={act.error} />
        <div class="actions">
          <button type="submit" disabled={act.busy}>
            {act.busy ? 'Creating…' : 'Create organization'}
          </button>
        </div>
      </form>
    </>
  );
}
