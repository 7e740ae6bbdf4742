import { useEffect } from 'preact/hooks';
import { navigate } from '../router.ts';
import { Empty, LAST_ORG, lastOrgKey, Link, PageHead, useSession } from '../ui.tsx';

/** The start page: opens the last (or first) organization; without one, says what to do. */
export function Home() {
  const s = useSession();
  const key = lastOrgKey(s.principal);
  const last = localStorage.getItem(key);
  const remembered = s.orgs.find((o) => o.id === last);
  const target = remembered ?? s.orgs[0];
  useEffect(() => {
    // one this user can no longer open (removed from it, deleted) is forgotten; so is the key that
    // every user of this browser shared before
    if (last && !remembered) localStorage.removeItem(key);
    localStorage.removeItem(LAST_ORG);
    if (target) navigate(`/orgs/${target.id}/ledgers`, { replace: true });
  }, [target?.id]);
  if (target) return null;
  return (
    <>
      <PageHead title="Welcome" />
      <Empty>
        {s.principal.user?.superuser ? (
          <>
            <p>There is no organization yet. An organization holds ledgers of contacts, its team and its API credentials.</p>
            <p>
              <Link href="/orgs/new" class="button">
                Create an organization
              </Link>
            </p>
          </>
        ) : (
          <p>You are not a member of any organization yet. Ask an administrator of your organization to add you.</p>
        )}
      </Empty>
    </>
  );
}
