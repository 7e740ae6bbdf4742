import { DAY_MS, type Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Cursors } from '../cursor.ts';
import { deleteInChunks } from '../jobs/chunk-pacing.ts';
import type { Queue } from '../jobs/queue.ts';
import { rejectionsPruner } from '../jobs/rejections-retention.ts';
import type { Runner, Scheduler } from '../jobs/scheduler.ts';
import type { LedgerModule } from '../ledger/index.ts';
import type { LedgerDataOwner } from '../ledger/model.ts';
import type { Logger } from '../log.ts';
import type { MetricsRegistry } from '../ops/metrics.ts';
import { dataFiles } from '../storage/data-files.ts';
import type { Db } from '../storage/db.ts';
import { createChangeService } from './change-service.ts';
import { createChangesRepo } from './changes-repo.ts';
import { createDailySets } from './daily-sets.ts';
import { createDailySetsRepo } from './daily-sets-repo.ts';
import { ArrivingFeeds, INBOX_TASK, pruneInboxDone, waitingInInbox } from './feed-files.ts';
import { FEED_JOB } from './feed-runner.ts';
import { createFeedService } from './feed-service.ts';
import { createFeedsRepo } from './feeds-repo.ts';
import { createPeopleRepo } from './people-repo.ts';
import { createPeopleService } from './people-service.ts';
import { createPersonIds } from './person-ids.ts';
import { createSettingsRepo } from '../storage/settings-repo.ts';
import type { Audit } from '../identity/audit.ts';
import { createReplaysRepo, utcDay } from './replays-repo.ts';
import { createTrackedContactsRepo } from './tracked-contacts-repo.ts';
import { createTracker, type ChangeListener } from './tracker.ts';

export type TrackingModule = ReturnType<typeof createTrackingModule>;

/** The stores change tracking reads and writes, on a connection. */
export function trackingReposOn(db: Db, dataDir: string) {
  return { people: createPeopleRepo(db), changes: createChangesRepo(db), trackedContacts: createTrackedContactsRepo(db), feeds: createFeedsRepo(db, dataFiles(dataDir)), replays: createReplaysRepo(db) };
}

/**
 * The tracker on a connection, with its stores: the bulk thread's (src/bulk-thread), where feeds
 * and import-time matching run, so changes are recorded there alone.
 */
export function trackerOn(db: Db, clock: Clock, dataDir: string, listeners: ChangeListener[]) {
  const repos = trackingReposOn(db, dataDir);
  return { repos, tracker: createTracker({ clock, people: repos.people, changes: repos.changes, contacts: repos.trackedContacts, replays: repos.replays, listeners }) };
}

/** Wires change tracking: the people store, matching, change history, feed jobs and the inbox. */
export function createTrackingModule(d: {
  db: Db;
  clock: Clock;
  log: Logger;
  config: Config;
  cursors: Cursors;
  queue: Queue;
  ledger: LedgerModule;
  kick: () => void;
  metrics: MetricsRegistry;
  audit: Audit;
  /** Where feed jobs run: the bulk thread's `run` (src/bulk-thread). */
  runFeed: Runner['run'];
}) {
  const repos = trackingReposOn(d.db, d.config.dataDir);
  const feeds = createFeedService({ db: d.db, clock: d.clock, cursors: d.cursors, log: d.log, queue: d.queue, feeds: repos.feeds, dataDir: d.config.dataDir, kick: d.kick, metrics: d.metrics, runFeed: d.runFeed, audit: d.audit });
  const changes = createChangeService({ cursors: d.cursors, ledgers: d.ledger.repos.ledgers, contacts: d.ledger.repos.contacts, changes: repos.changes, db: d.db });
  const dailySets = createDailySets({ clock: d.clock, log: d.log, db: d.db, dataDir: d.config.dataDir, ledgers: d.ledger.repos.ledgers, contacts: d.ledger.repos.contacts, sets: createDailySetsRepo(d.db), cursors: d.cursors, keepDays: d.config.changeSetsKeepDays });
  const arrivingFeeds = new ArrivingFeeds();
  const people = createPeopleService({
    db: d.db,
    clock: d.clock,
    people: repos.people,
    contacts: repos.trackedContacts,
    feeds: repos.feeds,
    audit: d.audit,
    // keyed by the installation's oldest secret (HKDF apart from the cursors' keys): one every
    // version had, so a backup from before the opaque ids, restored, answers the same ids (an upgrade tester's case)
    personIds: createPersonIds(createSettingsRepo(d.db).secret('cursor_secret')),
    arriving: { uploads: () => arrivingFeeds.count, inbox: (max) => waitingInInbox(d.config.dataDir, max) },
  });
  return {
    repos,
    feeds,
    changes,
    dailySets,
    people,
    arrivingFeeds,
    runners: { [FEED_JOB]: feeds.runner },
    /** Periodic work: the inbox poll; the daily change sets still missing, each night and at start; forgetting the records of old feeds; what old feeds left behind. */
    schedule(s: Scheduler): void {
      s.every({ seconds: 2 }, INBOX_TASK, () => feeds.scanInbox());
      s.every('10 0 * * *', 'daily-change-sets', async (ctl) => {
        await dailySets.catchUp(ctl);
        await dailySets.prune(ctl); // CHANGE_SETS_KEEP_DAYS
      });
      s.onStart('daily-change-sets', (ctl) => dailySets.catchUp(ctl));
      // with the other retention work (webhook-prune 00:20, identity-prune 03:40, jobs-prune 03:50)
      s.every('30 3 * * *', 'feed-replays-prune', async (ctl) => {
        const prune = repos.replays.pruner(utcDay(d.clock.now()));
        await deleteInChunks(d.db, [prune.step], { stopping: () => ctl.stopping });
        if (prune.deleted()) d.log.info({ removed: prune.deleted() }, 'records of old feeds forgotten');
      });
      // what ended feeds leave behind, kept REJECTIONS_KEEP_DAYS and INBOX_DONE_KEEP_DAYS
      s.every('45 3 * * *', 'feed-retention', async (ctl) => {
        const now = d.clock.now();
        if (d.config.rejectionsKeepDays > 0) {
          const prune = rejectionsPruner(repos.feeds, now - d.config.rejectionsKeepDays * DAY_MS);
          await deleteInChunks(d.db, [prune.step], { stopping: () => ctl.stopping });
          if (prune.deleted()) d.log.info({ removed: prune.deleted(), feeds: prune.jobs(), keepDays: d.config.rejectionsKeepDays }, 'rejected records of old feeds deleted');
        }
        if (d.config.inboxDoneKeepDays > 0 && !ctl.stopping) {
          const files = pruneInboxDone(d.config.dataDir, now - d.config.inboxDoneKeepDays * DAY_MS, d.log, () => ctl.stopping);
          if (files.length) d.log.info({ removed: files.length, keepDays: d.config.inboxDoneKeepDays }, 'old feed files removed from inbox/done/');
        }
      });
    },
    /** Change history and daily change sets go with their ledger, a contact's history with the contact (it holds its data). */
    ledgerData: {
      purgeRows: (ledgerId, n) => repos.changes.purgeChanges(ledgerId, n),
      removeFiles: (ledgerId) => dailySets.removeLedger(ledgerId),
      forgetContact: (contactId) => repos.changes.deleteChangesOfContact(contactId),
    } satisfies LedgerDataOwner,
  };
}
