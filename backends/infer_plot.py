"""The serving section of ``topoc report --format html``: for a strategy that names a model,
``topoc infer``'s search on the same GPUs and a plot of every fitting configuration's output
tokens/s per GPU against tokens/s per user, the Pareto front drawn through them (the trade-off
serving buys hardware by). It formats what ``compiler.analysis.infer.serving_view`` found."""

from __future__ import annotations

import html

from ..compiler.analysis.infer import InferResult


def plot(result: InferResult, title: str, pyplot, svg) -> str:
    """Scatter of the fitting rows (tokens/s per user on x, per GPU on y, logarithmic: the
    front spans orders of magnitude from the saturated engine to one request), front as a
    line; ``pyplot`` and ``svg`` are the page's matplotlib set-up and SVG writer."""
    plt = pyplot()
    rows = [r for r in result.rows if r.fits]
    front = sorted((r for r in rows if r.pareto), key=lambda r: r.tokens_per_s_per_user)
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.scatter([r.tokens_per_s_per_user for r in rows], [r.throughput_per_gpu for r in rows],
               s=9, color="#bbbbbb", label="configurations that fit")
    ax.plot([r.tokens_per_s_per_user for r in front], [r.throughput_per_gpu for r in front],
            "o-", color="#76b900", markersize=4, label="Pareto front")
    if all(r.throughput_per_gpu > 0 for r in rows):
        ax.set_yscale("log")
    ax.autoscale_view()
    _label(ax, front)
    ax.set_xlabel("output tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    return svg(fig)


def _label(ax, front) -> None:
    """Name the front's points that have room: a label is kept only when it is far enough on
    the page from every label kept before it (so neighbours at the low-throughput end do not
    print over each other), and written to the left of points in the right quarter (so it
    stays inside the frame)."""
    kept: list[tuple[float, float]] = []
    x_lo, x_hi = ax.get_xlim()
    for r in front:
        x, y = r.tokens_per_s_per_user, r.throughput_per_gpu
        px, py = ax.transData.transform((x, y))
        if any(abs(px - qx) < 70 and abs(py - qy) < 16 for qx, qy in kept):
            continue
        kept.append((px, py))
        c = r.config
        right = x > x_lo + 0.75 * (x_hi - x_lo)
        ax.annotate(f"tp{c.tp} pp{c.pp}" + (f" ep{c.ep}" if c.ep > 1 else "")
                    + f" c{c.concurrency}", (x, y), fontsize=7,
                    xytext=(-4 if right else 4, 4), textcoords="offset points",
                    ha="right" if right else "left")


def section(serving, pyplot, svg) -> str | None:
    """The HTML section body (plot and note) for a finished ``compiler.analysis.infer.
    serving_view``: None without a model, a note when the GPUs cannot serve it. ``pyplot`` and
    ``svg`` come from the page (report_html), so that both plot alike."""
    if serving is None:
        return None
    if serving.error is not None:
        return f"<p class=\"note\">{html.escape(serving.error)}</p>"
    result, model, gpus, precision = serving.result, serving.model, serving.gpus, serving.precision
    if not any(r.fits for r in result.rows):
        return (f"<p class=\"note\">{html.escape(model)} does not fit on {gpus} "
                f"GPU{'' if gpus == 1 else 's'} for serving.</p>")
    best = result.rows[0]
    title = f"{model} on {gpus} GPUs, {serving.isl} in / {serving.osl} out, {precision}"
    note = (f"{len(result.rows):,} configurations; the best: tp {best.config.tp}, pp "
            f"{best.config.pp}, {best.config.replicas} replicas at concurrency "
            f"{best.config.concurrency}, {best.throughput_per_gpu:,.0f} tokens/s per GPU, "
            f"TPOT {best.tpot * 1e3:.1f} ms, TTFT {best.ttft * 1e3:.1f} ms (independent "
            f"arrivals; {dict(best.parts)['ttft_closed_loop'] * 1e3:.1f} ms estimated for a "
            f"fixed-concurrency benchmark, empirical). <code>topoc infer FILE --model {model} "
            f"--isl N --osl N</code> for other lengths and limits (docs/infer.md).")
    return f"<figure>{plot(result, title, pyplot, svg)}</figure><p class=\"note\">{note}</p>"
