-- Labelled examples from the history import (issue 31): a solved case of the imported
-- history is an example with the one label its reply proves (needs_reply = 1); its
-- category and priority no person confirmed are NULL (unknown), never guessed into the table.
ALTER TABLE labelled_examples MODIFY category VARCHAR(32) NULL;
ALTER TABLE labelled_examples MODIFY priority VARCHAR(16) NULL;
