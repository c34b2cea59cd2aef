// charts.js -- the overview's two charts, drawn as SVG by this file: fire lateness (p50 and p99
// per bucket, a line each) and delivery outcomes (delivered, failed, skipped per bucket, stacked
// bars). A few dozen lines do what a charting package would, with nothing to fetch, bundle or
// keep up to date. Each chart is drawn at its box's width in pixels (so text keeps its size at
// 390 px) and drawn again when that width changes.
import { s, fmtMs, fmtInt } from './ui.js';

const HEIGHT = 220;
const PAD = { top: 12, right: 12, bottom: 28, left: 56 };
const TICKS = 4;

// Round steps for an axis from 0 to max: 1, 2 or 5 times a power of ten.
function niceMax(max) {
    if (!(max > 0)) return 1;
    const raw = max / TICKS;
    const p = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw);
    return step * TICKS;
}

// Steps a clock reads well, in ms: past a second, whole seconds and minutes (15 s, 1 min, 5 min).
const MS_STEPS = [1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5];
function niceMaxMs(max) {
    const raw = max / TICKS;
    if (raw <= 500) return niceMax(max);
    return (MS_STEPS.find((v) => v >= raw) ?? Math.ceil(raw / 36e5) * 36e5) * TICKS;
}

function frame(width, top, fmtY, buckets, label) {
    const plotW = width - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom;
    const y = (v) => PAD.top + plotH - (v / top) * plotH;
    const g = s('g');
    for (let i = 0; i <= TICKS; i++) {
        const v = (top / TICKS) * i;
        g.append(s('line', { x1: PAD.left, x2: width - PAD.right, y1: y(v), y2: y(v), class: i === 0 ? 'axis' : 'grid' }),
            s('text', { x: PAD.left - 8, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, fmtY(v)));
    }
    const step = plotW / Math.max(buckets.length, 1);
    const every = Math.ceil(buckets.length / Math.max(1, Math.floor(plotW / 64)));
    buckets.forEach((b, i) => {
        if (i % every === 0) {
            const t = new Date(b.start);
            g.append(s('text', { x: PAD.left + step * (i + 0.5), y: HEIGHT - 8, 'text-anchor': 'middle', class: 'tick' },
                t.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })));
        }
    });
    const svg = s('svg', { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`, role: 'img', 'aria-label': label, class: 'chart' }, g);
    return { svg, y, step, plotH };
}

export function latencyChart(width, buckets) {
    const max = Math.max(0, ...buckets.flatMap((b) => [b.lateness_p50_ms ?? 0, b.lateness_p99_ms ?? 0]));
    const worst = buckets.reduce((m, b) => Math.max(m, b.lateness_p99_ms ?? 0), 0);
    const { svg, y, step } = frame(width, niceMaxMs(max), fmtMs, buckets,
        `Fire lateness per bucket, p50 and p99; the worst p99 is ${fmtMs(worst)}`);
    for (const [key, cls] of [['lateness_p99_ms', 'p99'], ['lateness_p50_ms', 'p50']]) {
        let d = '';
        buckets.forEach((b, i) => {
            const v = b[key];
            if (v === null || v === undefined) return;
            const x = PAD.left + step * (i + 0.5);
            d += `${d && buckets[i - 1]?.[key] != null ? 'L' : 'M'}${x.toFixed(1)},${y(v).toFixed(1)}`;
            svg.append(s('circle', { cx: x, cy: y(v), r: 3, class: `dot ${cls}` }, s('title', {}, `${cls} ${fmtMs(v)}`)));
        });
        if (d) svg.prepend(s('path', { d, class: `line ${cls}` }));
    }
    svg.prepend(svg.querySelector('g'));
    return svg;
}

const OUTCOMES = [['delivered', 'ok'], ['failed', 'bad'], ['skipped', 'muted']];

export function outcomeChart(width, buckets) {
    const max = Math.max(0, ...buckets.map((b) => b.delivered + b.failed + b.skipped));
    const total = (k) => buckets.reduce((n, b) => n + b[k], 0);
    const { svg, y, step } = frame(width, niceMax(max), (v) => fmtInt(Math.round(v)), buckets,
        `Delivery outcomes per bucket: ${OUTCOMES.map(([k]) => `${fmtInt(total(k))} ${k}`).join(', ')}`);
    const barW = Math.max(2, Math.min(28, step * 0.6));
    buckets.forEach((b, i) => {
        let base = 0;
        for (const [k, tone] of OUTCOMES) {
            if (b[k] === 0) continue;
            const top = y(base + b[k]);
            svg.append(s('rect', { x: PAD.left + step * (i + 0.5) - barW / 2, y: top, width: barW, height: y(base) - top, class: `bar tone-${tone}` },
                s('title', {}, `${fmtInt(b[k])} ${k}`)));
            base += b[k];
        }
    });
    return svg;
}

// Draws make(width) into box now and whenever box's width changes.
export function drawInto(box, make) {
    let last = 0;
    const draw = () => {
        const w = Math.floor(box.clientWidth);
        if (w > 0 && w !== last) {
            last = w;
            box.replaceChildren(make(w));
        }
    };
    new ResizeObserver(draw).observe(box);
    draw();
}
