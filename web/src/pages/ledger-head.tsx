import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { api, LEDGER } from '../api.ts';
import { atLeast, fmtCount, Link, NotFoundState, PageHead, useRequest, useRole } from '../ui.tsx';
import type { Ledger } from './ledgers.tsx';

/**
 * "Try again" for a ledger's tab: `retry` reloads the tab's own requests (`reloads`) and, through
 * `again` in LedgerHead's `refresh`, the heading too. The list alone was asked again, and the
 * heading stayed "Ledger" without its count (a web tester's case on Contacts, a reviewer's on
 * Changes and Import history).
 */
export function useRetryWithHead(...reloads: (() => void)[]): { again: number; retry: () => void } {
  const [again, setAgain] = useState(0);
  return {
    again,
    retry: () => {
      for (const reload of reloads) reload();
      setAgain((n) => n + 1);
    },
  };
}

/**
 * The ledger's title, breadcrumb and tabs (Contacts, Changes, Import CSV, Import history), around the
 * page's own content (`children`). A ledger that does not exist (a wrong link, or deleted) is said
 * so, and nothing else is shown: no tabs, filters or import picker for a ledger that is not there.
 * `refresh`: read the ledger again when it changes (its count, after an import; a list of the
 * ledger's that answered 404: the ledger was deleted meanwhile).
 * `back`: where the ledger's crumb leads (a contact page: the filtered list it was opened from).
 */
export function LedgerHead(props: { orgId: string; ledgerId: string; tab: 'contacts' | 'changes' | 'import' | 'imports' | 'contact'; title?: string; back?: string; refresh?: unknown; children?: ComponentChildren }) {
  const { orgId, ledgerId } = props;
  const role = useRole(orgId);
  // A ledger found missing stays missing (ids are never given again): a refresh asked for after
  // that (its list answered 404 too) neither reads it again nor shows the tabs while it would.
  const knownMissing = useRef<string | undefined>(undefined);
  const req = useRequest((signal) => api<Ledger>('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}`, { signal }), [orgId, ledgerId], knownMissing.current === ledgerId ? 'missing' : props.refresh);
  const base = `/orgs/${orgId}/ledgers/${ledgerId}`;
  if (req.error?.status === 404) knownMissing.current = ledgerId;
  const missing = knownMissing.current === ledgerId;
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
