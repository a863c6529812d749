"""``email-rag users``: add, list, disable through the real CLI; the password is never shown."""

import json

from tests.helpers import run_cli

SECRET = "s3cret-passw0rd"


def test_add_list_disable(env, db, tmp_path):
    added = run_cli("users", "add", "anna", "--role", "staff", "--json",
                    env_extra={"EMAIL_RAG_NEW_USER_PASSWORD": SECRET})
    assert added.returncode == 0, added.stdout + added.stderr
    assert json.loads(added.stdout)["data"]["role"] == "staff"
    pw_file = tmp_path / "pw"
    pw_file.write_text(SECRET + "\n")
    admin = run_cli("users", "add", "root", "--role", "admin", "--password-file", str(pw_file))
    assert admin.returncode == 0 and "created" in admin.stdout

    again = run_cli("users", "add", "anna", "--role", "admin", "--password-file", str(pw_file))
    assert again.returncode == 1 and "exists already" in again.stdout
    no_pw = run_cli("users", "add", "ben", "--role", "staff")  # stdin is not a terminal
    assert no_pw.returncode == 1 and "--password-file" in no_pw.stdout

    listed = json.loads(run_cli("users", "list", "--json").stdout)["data"]["users"]
    assert [(u["name"], u["role"]) for u in listed] == [("anna", "staff"), ("root", "admin")]
    assert all("password_hash" not in u for u in listed)

    disabled = run_cli("users", "disable", "anna")
    assert disabled.returncode == 0 and "disabled" in disabled.stdout
    assert db.fetchone("SELECT disabled FROM users WHERE name = 'anna'")["disabled"] == 1
    assert run_cli("users", "disable", "nobody").returncode == 1

    for out in (added, admin, again, no_pw, disabled):
        assert SECRET not in out.stdout + out.stderr
    assert SECRET not in str(db.fetchall("SELECT * FROM audit_log"))
