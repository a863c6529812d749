"""The chaos harness: ``email-rag chaos`` drives the whole real pipeline under a seeded
fault plan and verifies the end state from the ground truth (see ``harness``)."""
