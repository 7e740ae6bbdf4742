import { useState } from 'preact/hooks';
import { api, ID, listAll, type Role } from '../api.ts';
import { Async, Confirm, Dialog, Empty, Field, fieldErrors, FormError, Notice, PageHead, SecretOnce, SecretStored, Time, useAction, useOrgNameElsewhere, useRequest, useRole, useShowSecret } from '../ui.tsx';

interface ServiceAccount {
  id: string;
  clientId: string;
  name: string;
  role: Role;
  createdAt: string;
  rotatedAt: string | null;
  lastUsedAt: string | null;
}
type WithSecret = ServiceAccount & { clientSecret: string };

/** API credentials of the organization: create (secret shown once), rotate, delete. */
export function ServiceAccounts(props: { orgId: string }) {
  const { orgId } = props;
  const role = useRole(orgId);
  const path = `${ID}/orgs/${orgId}/service-accounts`;
  const req = useRequest(async (signal) => ({ serviceAccounts: role === 'admin' ? (await listAll<ServiceAccount>(path, 'serviceAccounts', { signal })).items : [] }), [path, role]);
  const [creating, setCreating] = useState(false);
  // shown by the shell: also when the answer comes after this page was left (Back)
  const showSecret = useShowSecret();
  const [rotating, setRotating] = useState<ServiceAccount>();
  const [deleting, setDeleting] = useState<ServiceAccount>();
  const [notice, setNotice] = useState<string>();
  if (role !== 'admin')
    return (
      <>
        <PageHead title="Service accounts" />
        <Empty>Service accounts are managed by the organization's admins.</Empty>
      </>
    );
  return (
    <>
      <PageHead title="Service accounts" sub="Credentials for integrations: a client id and a secret that exchange for access tokens. Each acts with the role you give it.">
        <button type="button" onClick={() => setCreating(true)}>
          New service account
        </button>
      </PageHead>
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      <Async
        req={req}
        label="Loading service accounts…"
        empty={(d) => d.serviceAccounts.length === 0}
        emptyText={<p>No service accounts yet. Create one to give an integration (a CRM sync, a script) its own credential instead of a person's password.</p>}
      >
        {(d) => (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Service accounts">
            {/* one labelled block per account below 720 px, as the Team page: the table scrolled sideways with Rotate secret and Delete out of sight (a tester's case) */}
            <table class="stack service-accounts">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Client id</th>
                  <th scope="col">Role</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.serviceAccounts.map((sa) => (
                  <tr key={sa.id}>
                    <th scope="row">{sa.name}</th>
                    <td class="mono" data-label="Client id">
                      {sa.clientId}
                    </td>
                    <td data-label="Role">{sa.role}</td>
                    <td data-label="Created">
                      <Time iso={sa.createdAt} dateOnly />
                    </td>
                    <td data-label="Last used">{sa.lastUsedAt ? <Time iso={sa.lastUsedAt} /> : <span class="muted">never</span>}</td>
                    <td class="cell-actions">
                      <button type="button" class="secondary small" aria-label={`Rotate the secret of ${sa.name}`} onClick={() => setRotating(sa)}>
                        Rotate secret
                      </button>
                      <button type="button" class="danger-outline small" aria-label={`Delete ${sa.name}`} onClick={() => setDeleting(sa)}>
                        Delete
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Async>
      {creating && (
        <CreateServiceAccount
          orgId={orgId}
          onClose={() => setCreating(false)}
          onDone={(sa) => {
            setCreating(false);
            showSecret((close) => <SecretDialog orgId={orgId} sa={sa} rotated={false} onClose={close} />);
            req.reload();
          }}
        />
      )}
      {rotating && (
        <Confirm
          title={`Rotate the secret of ${rotating.name}?`}
          confirm="Rotate secret"
          onClose={() => setRotating(undefined)}
          onConfirm={async () => {
            const sa = await api<WithSecret>('POST', `${ID}/orgs/${orgId}/service-accounts/${rotating.id}/rotate`);
            showSecret((close) => <SecretDialog orgId={orgId} sa={sa} rotated onClose={close} />);
            req.reload();
            return true;
          }}
        >
          <p>A new secret is made and shown once. The old secret and every session started with it stop working at once: update the integration right after.</p>
        </Confirm>
      )}
      {deleting && (
        <Confirm
          title={`Delete ${deleting.name}?`}
          confirm="Delete service account"
          danger
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await api('DELETE', `${ID}/orgs/${orgId}/service-accounts/${deleting.id}`);
            setNotice(`Deleted ${deleting.name}; its tokens no longer work.`);
            req.reload();
            return true;
          }}
        >
          <p>The integration using it stops working at once: its tokens are refused from the next request.</p>
        </Confirm>
      )}
    </>
  );
}

/**
 * The new or rotated secret of a service account, shown once (by the shell: useShowSecret) over
 * any page: over one not of its organization, its title names the organization.
 */
function SecretDialog(props: { orgId: string; sa: WithSecret; rotated: boolean; onClose: () => void }) {
  const { sa, rotated } = props;
  const org = useOrgNameElsewhere(props.orgId);
  const title = rotated ? `New secret for ${sa.name}` : `${sa.name} is ready`;
  return (
    <Dialog title={org ? `${title} in ${org}` : title} onClose={props.onClose} wide backCloses>
      <SecretOnce
        label="client secret"
        value={sa.clientSecret}
        extra={
          <div class="field">
            <label for="client-id">Client id</label>
            <input id="client-id" class="mono" readOnly value={sa.clientId} onFocus={(e) => e.currentTarget.select()} />
          </div>
        }
      />
      <details>
        <summary>How the integration signs in</summary>
        <pre class="code">{`POST ${location.origin}/api/identity/v1/session
Content-Type: application/json

{"grantType": "clientCredentials",
 "clientId": "${sa.clientId}",
 "clientSecret": "<the secret above>"}`}</pre>
        <p class="hint">
          The answer holds an access token, good for the number of seconds its <code>expiresIn</code> says, and a refresh token. API documentation: /api/identity/v1/openapi.json and /api/ledger/v1/openapi.json.
        </p>
      </details>
      <SecretStored onClose={props.onClose} />
    </Dialog>
  );
}

function CreateServiceAccount(props: { orgId: string; onClose: () => void; onDone: (sa: WithSecret) => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const act = useAction(async () => props.onDone(await api<WithSecret>('POST', `${ID}/orgs/${props.orgId}/service-accounts`, { body: { name: name.trim(), role } })));
  const fields = ['name', 'role'] as const;
  const err = fieldErrors(act.error, fields);
  return (
    <Dialog title="New service account" onClose={props.onClose} busy={act.busy}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <Field label="Name" hint="What uses it, e.g. “CRM sync”." error={err.name}>
          {(id, d, invalid) => <input id={id} required maxLength={256} autoFocus aria-describedby={d} aria-invalid={invalid} value={name} onInput={(e) => act.edited(setName)(e.currentTarget.value)} />}
        </Field>
        <Field label="Role" hint="Give the least it needs: viewer to read and download, editor to import." error={err.role}>
          {(id, d, invalid) => (
            <select id={id} aria-describedby={d} aria-invalid={invalid} value={role} onChange={(e) => act.edited(setRole)(e.currentTarget.value as Role)}>
              <option value="viewer">viewer</option>
              <option value="editor">editor</option>
              <option value="admin">admin</option>
            </select>
          )}
        </Field>
        <FormError error={act.error} fields={fields} />
        <div class="actions">
          <button type="button" class="secondary" disabled={act.busy} onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" disabled={act.busy}>
            {act.busy ? 'Creating…' : 'Create'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
