// Formatting: the browser's locale, the website's time zone.

export const numbers = new Intl.NumberFormat();

export function formatTime(iso, timeZone) {
  if (!iso) {
    return '';
  }
  const opts = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit',
    timeZone: timeZone || 'UTC', timeZoneName: 'short' };
  try {
    return new Intl.DateTimeFormat(undefined, opts).format(new Date(iso));
  } catch (e) {
    return new Intl.DateTimeFormat(undefined, { ...opts, timeZone: 'UTC' }).format(new Date(iso));
  }
}

// zonedToUTC reads a datetime-local value ("2026-03-01T09:30") as a wall
// clock time in timeZone and returns the moment, as an ISO string.
export function zonedToUTC(local, timeZone) {
  const [d, t] = local.split('T');
  const [y, mo, da] = d.split('-').map(Number);
  const [h, mi] = (t || '0:0').split(':').map(Number);
  const wall = Date.UTC(y, mo - 1, da, h, mi);
  const offset = (at) => {
    const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric',
      day: 'numeric', hour: 'numeric', minute: 'numeric' }).formatToParts(new Date(at)).map((p) => [p.type, p.value]));
    return Date.UTC(+parts.year, +parts.month - 1, +parts.day, +parts.hour, +parts.minute) - at;
  };
  let at = wall - offset(wall);
  at = wall - offset(at); // once more, across a change of offset
  return new Date(at).toISOString();
}

// zonedLocal is the moment iso as a datetime-local value on timeZone's
// wall clock (the inverse of zonedToUTC).
export function zonedLocal(iso, timeZone) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit',
    day: '2-digit', hour: '2-digit', minute: '2-digit' }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
  return parts.year + '-' + parts.month + '-' + parts.day + 'T' + parts.hour + ':' + parts.minute;
}

// timeZones are the IANA time zones to choose from, UTC first (Chromium's
// list lacks it, and a browser on UTC would show a blank choice).
export function timeZones() {
  let zones = [];
  try {
    zones = Intl.supportedValuesOf('timeZone');
  } catch (e) {
    // an older browser: UTC alone
  }
  return ['UTC', ...zones.filter((z) => z !== 'UTC')];
}
