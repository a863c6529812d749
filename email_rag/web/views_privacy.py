"""Admin page: a person's data, export and erasure (``/admin/privacy``, admins only).

Export writes the archive of ``email-rag privacy export`` (``personal_data.export``) and sends
it as a download. Forget takes two POSTs: the first checks the address and the reason and
shows what would be deleted (nothing is deleted), the second (``confirmed``) carries it
out through ``erasure_requests.request``: at once with a Qdrant server, else queued for
the vector worker. Both are audited under the address's hash by the code they call."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from ..core.errors import BadInputError
from ..privacy import erasure_requests, personal_data
from .render import page
from .render import tr as _tr
from .security import AdminUser, FormStr, flash

router = APIRouter(prefix="/admin/privacy")


def _svc(request: Request):
    return request.app.state.pool.get()


@router.get("")
def privacy_page(request: Request, user: AdminUser):
    svc = _svc(request)
    rows = [{**e, "again": bool(e["pending"]) and e["state"] != "queued",
             "tone": "bad" if e["state"] == "partial" or e["last_error"]
             else "ok" if e["state"] == "done" else ""}
            for e in erasure_requests.recent(svc)]
    return page(request, "privacy.html", erasures=rows,
                queued=not erasure_requests.runs_here(svc.settings))


@router.post("/export")
async def export(request: Request, user: AdminUser, address: FormStr = ""):
    svc = _svc(request)

    def write() -> bytes:
        fd, name = tempfile.mkstemp(suffix=".zip")
        os.close(fd)
        try:
            personal_data.export(svc, address, name, user.actor)
            return Path(name).read_bytes()
        finally:
            Path(name).unlink(missing_ok=True)

    try:
        data = await anyio.to_thread.run_sync(write)
    except BadInputError as e:
        flash(request, "error", _tr(request, user, "Nothing exported: %(why)s", why=e))
        return RedirectResponse("/admin/privacy", status_code=303)
    name = f"person-{personal_data.address_hash(address)[:12]}.zip"
    return Response(data, media_type="application/zip", headers={
        "Content-Disposition": f'attachment; filename="{name}"',
        "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})


@router.post("/forget")
def forget(request: Request, user: AdminUser, address: FormStr = "", reason: FormStr = "",
           confirmed: FormStr = ""):
    svc = _svc(request)
    try:
        personal_data.normalise(address)
        if not " ".join(reason.split()):
            raise BadInputError("give the reason for the erasure: it is kept")
        if not confirmed:
            return page(request, "privacy_confirm.html", address=address.strip(),
                        reason=reason, plan=erasure_requests.plan(svc, address),
                        queued=not erasure_requests.runs_here(svc.settings))
        done = erasure_requests.request(svc, address, reason, user.actor)
    except BadInputError as e:
        flash(request, "error", _tr(request, user, "Nothing erased: %(why)s", why=e))
        return RedirectResponse("/admin/privacy", status_code=303)
    if done.queued:
        flash(request, "ok", _tr(request, user, "Erasure queued (entry #%(job)s): the vector "
                                 "worker carries it out; its state is in the list below.",
                                 job=done.job_id))
    elif done.result is not None and done.result.state == "partial":
        flash(request, "warn", _tr(request, user, "Partly erased: %(n)s mail(s); a store is "
                                   "down or a mail is being processed. Erase again to finish.",
                                   n=done.result.erased))
    elif done.result is not None and done.result.remaining:
        flash(request, "error", _tr(request, user, "Erased %(n)s mail(s), but the check "
                                    "still finds: %(left)s.", n=done.result.erased,
                                    left=", ".join(f"{k} {v}" for k, v in
                                                   done.result.remaining.items())))
    else:
        flash(request, "ok", _tr(request, user, "Erased %(n)s mail(s); the check finds "
                                 "nothing of the person.",
                                 n=done.result.erased if done.result else 0))
    return RedirectResponse("/admin/privacy", status_code=303)
