import { useState } from 'preact/hooks';
import { api, LEDGER, listAll } from '../api.ts';
import { navigate } from '../router.ts';
import { Async, atLeast, Confirm, Dialog, Field, fieldErrors, fmtCount, fmtNumber, FormError, Link, Notice, PageHead, Time, useAction, useMounted, useRequest, useRole, useSession } from '../ui.tsx';

export interface Ledger {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  contactCount: number;
  createdAt: string;
  updatedAt: string;
}

/** Ledgers of an organization: list, create, rename, delete (with confirmation). */
export function Ledgers(props: { orgId: string }) {
  const { orgId } = props;
  const role = useRole(orgId);
  const org = useSession().orgs.find((o) => o.id === orgId);
  // pages of 100 shown, "Load more" adds one; a reload reads them all again from the first
  const [pages, setPages] = useState(1);
  const req = useRequest(
    async (signal) => {
      const r = await listAll<Ledger>(`${LEDGER}/orgs/${orgId}/ledgers`, 'ledgers', { signal, limit: 100, pages });
      return { ledgers: r.items, next: r.nextCursor };
    },
    [orgId, pages],
  );
  const [dialog, setDialog] = useState<{ kind: 'new' } | { kind: 'rename' | 'delete'; ledger: Ledger } | null>(null);
  const [notice, setNotice] = useState<string>();
  const close = () => setDialog(null);
  const here = useMounted();

  return (
    <>
      <PageHead title="Ledgers" sub={org ? `${org.name} · your role: ${role}` : undefined}>
        {atLeast(role, 'editor') && (
          <button type="button" onClick={() => setDialog({ kind: 'new' })}>
            New ledger
          </button>
        )}
      </PageHead>
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      <Async
        req={req}
        keepStale
        label="Loading ledgers…"
        empty={(d) => d.ledgers.length === 0}
        emptyText={
          <>
            <p>
              <strong>No ledgers yet.</strong> A ledger is a list of business contacts that contact-ledger keeps up to date.
            </p>
            {atLeast(role, 'editor') ? <p>Create one, then import a CSV file of contacts.</p> : <p>An editor of this organization can create one.</p>}
          </>
        }
      >
        {(d) => (
          <>
            <ul class="cards" aria-label="Ledgers">
              {d.ledgers.map((l) => (
                <li key={l.id} class="card ledger-card">
                  <div class="ledger-main">
                    <h2>
                      <Link href={`/orgs/${orgId}/ledgers/${l.id}`}>{l.name}</Link>
                    </h2>
                    {l.description && <p class="muted">{l.description}</p>}
                    <p class="meta">
                      <span>
                        <strong>{fmtNumber(l.contactCount)}</strong> {l.contactCount === 1 ? 'contact' : 'contacts'}
                      </span>
                      <span>
                        updated <Time iso={l.updatedAt} />
                      </span>
                    </p>
                  </div>
                  {atLeast(role, 'editor') && (
                    <div class="row-actions">
                      <button type="button" class="secondary small" onClick={() => setDialog({ kind: 'rename', ledger: l })} aria-label={`Rename ${l.name}`}>
                        Rename
                      </button>
                      {atLeast(role, 'admin') && (
                        <button type="button" class="danger-outline small" onClick={() => setDialog({ kind: 'delete', ledger: l })} aria-label={`Delete ${l.name}`}>
                          Delete
                        </button>
                      )}
                    </div>
                  )}
                </li>
              ))}
            </ul>
            {d.next && (
              <button type="button" class="secondary" disabled={req.loading} onClick={() => setPages(pages + 1)}>
                {req.loading ? 'Loading…' : 'Load more'}
              </button>
            )}
          </>
        )}
      </Async>
      {dialog?.kind === 'new' && (
        <LedgerForm
          orgId={orgId}
          onClose={close}
          onDone={(l) => {
            close();
            // not when Back left this page while the ledger was created: the page gone to stays
            if (here.current) navigate(`/orgs/${orgId}/ledgers/${l.id}`);
          }}
        />
      )}
      {dialog?.kind === 'rename' && (
        <LedgerForm
          orgId={orgId}
          ledger={dialog.ledger}
          onClose={close}
          onDone={(l) => {
            close();
            setNotice(`Saved "${l.name}".`);
            req.reload();
          }}
        />
      )}
      {dialog?.kind === 'delete' && (
        <Confirm
          title={`Delete "${dialog.ledger.name}"?`}
          confirm="Delete ledger"
          danger
          onClose={close}
          onConfirm={async () => {
            await api('DELETE', `${LEDGER}/orgs/${orgId}/ledgers/${dialog.ledger.id}`);
            setNotice(`Deleted "${dialog.ledger.name}".`);
            req.reload();
            return true;
          }}
        >
          <p>
            This deletes the ledger with its <strong>{fmtCount(dialog.ledger.contactCount, 'contact')}</strong>, its imports and its change history. It cannot be undone.
          </p>
        </Confirm>
      )}
    </>
  );
}

export function LedgerForm(props: { orgId: string; ledger?: Ledger; onClose: () => void; onDone: (l: Ledger) => void }) {
  const [name, setName] = useState(props.ledger?.name ?? '');
  const [description, setDescription] = useState(props.ledger?.description ?? '');
  const act = useAction(async () => {
    const body = { name: name.trim(), description: description.trim() };
    const l = props.ledger
      ? await api<Ledger>('PATCH', `${LEDGER}/orgs/${props.orgId}/ledgers/${props.ledger.id}`, { body })
      : await api<Ledger>('POST', `${LEDGER}/orgs/${props.orgId}/ledgers`, { body: description.trim() ? body : { name: body.name } });
    props.onDone(l);
  });
  const fields = ['name', 'description'] as const;
  const err = fieldErrors(act.error, fields);
  return (
    <Dialog title={props.ledger ? 'Rename ledger' : 'New ledger'} onClose={props.onClose} busy={act.busy}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <Field label="Name" error={err.name}>
          {(id, d, invalid) => <input id={id} required maxLength={200} aria-describedby={d} aria-invalid={invalid} value={name} onInput={(e) => act.edited(setName)(e.currentTarget.value)} autoFocus />}
        </Field>
        <Field label="Description (optional)" error={err.description}>
          {(id, d, invalid) => <textarea id={id} rows={3} maxLength={2000} aria-describedby={d} aria-invalid={invalid} value={description} onInput={(e) => act.edited(setDescription)(e.currentTarget.value)} />}
        </Field>
        <FormError error={act.error} fields={fields} />
        <div class="actions">
          <button type="button" class="secondary" disabled={act.busy} onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" disabled={act.busy}>
            {act.busy ? 'Saving…' : props.ledger ? 'Save' : 'Create ledger'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
