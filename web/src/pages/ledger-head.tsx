import { api, LEDGER } from '../api.ts';
import { atLeast, fmtNumber, Link, PageHead, useRequest, useRole } from '../ui.tsx';
import type { Ledger } from './ledgers.tsx';

/** The ledger's title, breadcrumb and tabs (Contacts, Import CSV, Import history). */
export function LedgerHead(props: { orgId: string; ledgerId: string; tab: 'contacts' | 'import' | 'imports' | 'contact'; title?: string }) {
  const { orgId, ledgerId } = props;
  const role = useRole(orgId);
  const req = useRequest((signal) => api<Ledger>('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}`, { signal }), [orgId, ledgerId]);
  const base = `/orgs/${orgId}/ledgers/${ledgerId}`;
  const name = req.data?.name ?? (req.error ? 'Ledger' : '…');
  const tabs = [
    { id: 'contacts', href: base, label: 'Contacts' },
    ...(atLeast(role, 'editor') ? [{ id: 'import', href: `${base}/import`, label: 'Import CSV' }] : []),
    { id: 'imports', href: `${base}/imports`, label: 'Import history' },
  ];
  return (
    <>
      <PageHead
        title={props.title ?? name}
        crumbs={[{ href: `/orgs/${orgId}/ledgers`, label: 'Ledgers' }, ...(props.title ? [{ href: base, label: name }] : [])]}
        sub={!props.title && req.data ? `${fmtNumber(req.data.contactCount)} contacts${req.data.description ? ` · ${req.data.description}` : ''}` : undefined}
      />
      {req.error && req.error.status === 404 && <p class="state error" role="alert">This ledger does not exist (it may have been deleted).</p>}
      {props.tab !== 'contact' && (
        <nav class="tabs" aria-label="Ledger">
          {tabs.map((t) => (
            <Link key={t.id} href={t.href} aria-current={t.id === props.tab ? 'page' : undefined}>
              {t.label}
            </Link>
          ))}
        </nav>
      )}
    </>
  );
}
