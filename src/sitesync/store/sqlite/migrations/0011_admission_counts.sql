-- Admissions count their hosts' pending tasks in one statement per batch (frontier.sql,
-- count_admitted_by_host) instead of a trigger per inserted task, which cost as much as the
-- inserts themselves. State changes and deletes keep their triggers.
DROP TRIGGER tasks_count_insert;
