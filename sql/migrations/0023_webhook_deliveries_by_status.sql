-- A webhook's delivery log filtered by status (GET …/webhooks/:id/deliveries?status=failed) walked
-- every delivery of the webhook, newest first, to find the few of that status: 85 ms for a webhook
-- with 270,000 deliveries and five failed ones (30 days of a busy ledger's changes), on the event
-- loop. With the status in the index the page is one seek (0.09 ms). An entry moves once, when its
-- delivery ends (pending → delivered or failed).
CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries (webhook_id, status, seq);
