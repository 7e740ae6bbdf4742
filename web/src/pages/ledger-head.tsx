import type { ComponentChildren } from 'preact';
import { api, LEDGER } from '../api.ts';
import { atLeast, fmtCount, Link, NotFoundState, PageHead, useRequest, useRole } from '../ui.tsx';
import type { Ledger } from './ledgers.tsx';

/**
 * The ledger's title, breadcrumb and tabs (Contacts, Changes, Import CSV, Import history), around the
 * page's own content (`children`). A ledger that does not exist (a wrong link, or deleted) is said
 * so, and nothing else is shown: no tabs, filters or import picker for a ledger that is not there.
 * `refresh`: read the ledger again when it changes (its count, after an import).
 * `back`: where the ledger's crumb leads (a contact page: the filtered list it was opened from).
 */
export function LedgerHead(props: { orgId: string; ledgerId: string; tab: 'contacts' | 'changes' | 'import' | 'imports' | 'contact'; title?: string; back?: string; refresh?: unknown; children?: ComponentChildren }) {
  const { orgId, ledgerId } = props;
  const role = useRole(orgId);
  const req = useRequest((signal) => api<Ledger>('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}`, { signal }), [orgId, ledgerId], props.refresh);
  const base = `/orgs/${orgId}/ledgers/${ledgerId}`;
  const missing = req.error?.status === 404;
  const name = req.data?.name ?? (req.error ? 'Ledger' : '…');
  const tabs = [
    { id: 'contacts', href: base, label: 'Contacts' },
    { id: 'changes', href: `${base}/changes`, label: 'Changes' },
    ...(atLeast(role, 'editor') ? [{ id: 'import', href: `${base}/import`, label: 'Import CSV' }] : []),
    { id: 'imports', href: `${base}/imports`, label: 'Import history' },
  ];
  if (missing)
    return (
      <>
        <PageHead title="Ledger not found" crumbs={[{ href: `/orgs/${orgId}/ledgers`, label: 'Ledgers' }]} />
        <NotFoundState>
          <p>
            <strong>This ledger does not exist</strong> (it may have been deleted).
          </p>
          <p>
            <Link href={`/orgs/${orgId}/ledgers`}>Go to the ledgers of this organization</Link>
          </p>
        </NotFoundState>
      </>
    );
  return (
    <>
      <PageHead
        title={props.title ?? name}
        // the tabs share the heading; the window's title (history, screen readers' page list) says which one
        docTitle={props.tab === 'import' || props.tab === 'imports' || props.tab === 'changes' ? `${tabs.find((t) => t.id === props.tab)?.label ?? 'Import'} · ${name}` : undefined}
        crumbs={[{ href: `/orgs/${orgId}/ledgers`, label: 'Ledgers' }, ...(props.title ? [{ href: props.back ?? base, label: name }] : [])]}
        sub={!props.title && req.data ? `${fmtCount(req.data.contactCount, 'contact')}${req.data.description ? ` · ${req.data.description}` : ''}` : undefined}
      />
      {props.tab !== 'contact' && (
        <nav class="tabs" aria-label="Ledger">
          {tabs.map((t) => (
            <Link key={t.id} href={t.href} aria-current={t.id === props.tab ? 'page' : undefined}>
              {t.label}
            </Link>
          ))}
        </nav>
      )}
      {props.children}
    </>
  );
}
