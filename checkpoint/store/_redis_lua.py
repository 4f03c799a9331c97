"""The Lua the Redis store runs: each call is one atomic script, one round trip.

KEYS, all under one hash tag (so one Cluster slot): 1 items (field -> value JSON),
2 created (field -> epoch seconds), 3 updated (zset, field by epoch seconds), 4 expires
(zset), 5 ttl (field -> minutes), 6 vectors (field -> float32 bytes), 7 namespaces
(namespace code -> live item count). A field is ``<namespace code><escaped key>``.

Filters are checked here with the same typed rules as ``_core``: numbers with numbers,
strings with strings compared byte by byte (not with ``strcoll``, which follows the
server's locale), a missing field equal to null.

cjson decodes ``[]`` and ``{}`` alike, as an empty table. A condition whose list or dict
operand holds an empty one is sent flagged, with each empty list as the string ``"\0"``
(no stored string holds a NUL: put refuses it); a value is then read with each ``[]``
outside its strings rewritten to that string first, so ``deepeq`` tells the two apart.
Without such a condition an empty table can only meet an operand's non-empty one or a
scalar, which differ from it either way, so values are decoded as they are.
"""

from __future__ import annotations

__all__ = ["CANDIDATES", "GET", "NAMESPACES", "PAGE", "PUT", "SIZE", "TOUCH"]

_COMMON = r"""
local K = KEYS
local function remove(f)
  redis.call('HDEL', K[1], f)
  redis.call('HDEL', K[2], f)
  redis.call('ZREM', K[3], f)
  redis.call('ZREM', K[4], f)
  redis.call('HDEL', K[5], f)
  redis.call('HDEL', K[6], f)
  local ns = string.match(f, '^(.*/)')
  if redis.call('HINCRBY', K[7], ns, -1) <= 0 then redis.call('HDEL', K[7], ns) end
end
local function sweep(now, budget)
  while true do
    local dead = redis.call('ZRANGEBYSCORE', K[4], '-inf', now, 'LIMIT', 0, budget or 500)
    for _, f in ipairs(dead) do remove(f) end
    if budget or #dead == 0 then return end
  end
end
local function restart(f, now)
  local t = redis.call('HGET', K[5], f)
  if t then redis.call('ZADD', K[4], string.format('%.17g', now + tonumber(t) * 60), f) end
end
local EMPTY_LIST = string.char(0)
local function kind(x)
  if x == nil or x == cjson.null then return 'null' end
  local t = type(x)
  if t == 'boolean' then return 'bool' end
  if t == 'number' then return 'num' end
  if t == 'string' then return x == EMPTY_LIST and 'other' or 'str' end
  return 'other'
end
-- raw JSON with each empty array outside a string as "\u0000" (see the module docstring);
-- the stored text is compact (no blanks inside '[]')
local function marked(raw)
  if not string.find(raw, '[]', 1, true) then return raw end
  local out, from, i = {}, 1, 1
  while true do
    local s = string.find(raw, '["%[]', i)
    if not s then break end
    if string.byte(raw, s) == 34 then
      -- a string: skip to its closing quote, past escaped characters
      local j = s + 1
      while true do
        local q = string.find(raw, '["\\]', j)
        if string.byte(raw, q) == 92 then j = q + 2 else i = q + 1 break end
      end
    elseif string.byte(raw, s + 1) == 93 then
      out[#out + 1] = string.sub(raw, from, s - 1)
      out[#out + 1] = '"\\u0000"'
      from, i = s + 2, s + 2
    else
      i = s + 1
    end
  end
  out[#out + 1] = string.sub(raw, from)
  return table.concat(out)
end
local function order(a, b)
  if type(a) == 'number' then
    if a < b then return -1 elseif a > b then return 1 else return 0 end
  end
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x - y end
  end
  return #a - #b
end
local function deepeq(a, b)
  if type(a) ~= 'table' or type(b) ~= 'table' then return a == b end
  for k, x in pairs(a) do
    if not deepeq(x, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
local function holds(v, c)
  local got = v
  for _, p in ipairs(c[1]) do
    if type(got) ~= 'table' then got = nil break end
    got = got[p]
    if got == nil then break end
  end
  local op, want, k = c[2], c[3], c[4]
  local same = kind(got) == k
  local eq = same and (k == 'null' or got == want or (k == 'other' and deepeq(got, want)))
  if op == '$eq' then return eq end
  if op == '$ne' then return not eq end
  if not same then return false end
  local d = order(got, want)
  if op == '$gt' then return d > 0 elseif op == '$gte' then return d >= 0
  elseif op == '$lt' then return d < 0 else return d <= 0 end
end
local function passes(raw, conds)
  if not conds then return true end
  local v = cjson.decode(conds.empties and marked(raw) or raw)
  for _, c in ipairs(conds) do
    if not holds(v, c) then return false end
  end
  return true
end
-- the conditions JSON ('' none): each [path, op, operand, kind, empties flag]
local function conditions(text)
  if text == '' then return nil end
  local conds = cjson.decode(text)
  for _, c in ipairs(conds) do
    if c[5] == 1 then conds.empties = true end
  end
  return conds
end
-- walk live items under prefix p, newest first, calling visit(f, value, expires) until it
-- returns true
local function walk(p, now, conds, visit)
  local start, chunk = 0, 256
  while true do
    local batch = redis.call('ZREVRANGE', K[3], start, start + chunk - 1)
    if #batch == 0 then return end
    for _, f in ipairs(batch) do
      if string.sub(f, 1, #p) == p then
        local e = redis.call('ZSCORE', K[4], f)
        if not e or tonumber(e) > now then
          local v = redis.call('HGET', K[1], f)
          if v and passes(v, conds) then
            if visit(f, v, e) then return end
          end
        end
      end
    end
    start = start + chunk
  end
end
"""

# ARGV: field, namespace code, value JSON ('' deletes), now, ttl minutes or '', expiry or
# '', vectors ('' none)
PUT = (
    _COMMON
    + r"""
local f, ns, v, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
sweep(now, 16)
local present = redis.call('HEXISTS', K[1], f) == 1
local live = present
if present then
  local e = redis.call('ZSCORE', K[4], f)
  if e and tonumber(e) <= now then live = false end
end
if v == '' then
  if present then remove(f) end
  return live and 1 or 0
end
redis.call('HSET', K[1], f, v)
if not live then redis.call('HSET', K[2], f, ARGV[4]) end
if not present then redis.call('HINCRBY', K[7], ns, 1) end
redis.call('ZADD', K[3], ARGV[4], f)
if ARGV[5] ~= '' then
  redis.call('ZADD', K[4], ARGV[6], f)
  redis.call('HSET', K[5], f, ARGV[5])
else
  redis.call('ZREM', K[4], f)
  redis.call('HDEL', K[5], f)
end
if ARGV[7] ~= '' then redis.call('HSET', K[6], f, ARGV[7]) else redis.call('HDEL', K[6], f) end
return live and 1 or 0
"""
)

# ARGV: field, now, refresh ('1'/'0') -> {value, created, updated} or nil
GET = (
    _COMMON
    + r"""
local f, now = ARGV[1], tonumber(ARGV[2])
local v = redis.call('HGET', K[1], f)
if not v then return nil end
local e = redis.call('ZSCORE', K[4], f)
if e and tonumber(e) <= now then return nil end
if e and ARGV[3] == '1' then restart(f, now) end
return {v, redis.call('HGET', K[2], f), redis.call('ZSCORE', K[3], f)}
"""
)

# ARGV: prefix code, now, offset, limit, conditions JSON or '', refresh
# -> flat list of field, value, created, updated
PAGE = (
    _COMMON
    + r"""
local p, now = ARGV[1], tonumber(ARGV[2])
local skip, want = tonumber(ARGV[3]), tonumber(ARGV[4])
local conds = conditions(ARGV[5])
local out = {}
if want <= 0 then return out end
walk(p, now, conds, function(f, v, e)
  if skip > 0 then skip = skip - 1 return false end
  if e and ARGV[6] == '1' then restart(f, now) end
  out[#out + 1] = f
  out[#out + 1] = v
  out[#out + 1] = redis.call('HGET', K[2], f)
  out[#out + 1] = redis.call('ZSCORE', K[3], f)
  want = want - 1
  return want == 0
end)
return out
"""
)

# ARGV: prefix code, now, conditions JSON or '', with vectors ('1'/'0')
# -> flat list of field, value, created, updated, vectors ('' when none)
CANDIDATES = (
    _COMMON
    + r"""
local p, now = ARGV[1], tonumber(ARGV[2])
local conds = conditions(ARGV[3])
local out = {}
walk(p, now, conds, function(f, v, e)
  out[#out + 1] = f
  out[#out + 1] = v
  out[#out + 1] = redis.call('HGET', K[2], f)
  out[#out + 1] = redis.call('ZSCORE', K[3], f)
  local vec = ''
  if ARGV[4] == '1' then vec = redis.call('HGET', K[6], f) or '' end
  out[#out + 1] = vec
  return false
end)
return out
"""
)

# ARGV: now, fields... : restart the TTL of each
TOUCH = (
    _COMMON
    + r"""
local now = tonumber(ARGV[1])
for i = 2, #ARGV do restart(ARGV[i], now) end
return 0
"""
)

# ARGV: now -> namespace codes with live items
NAMESPACES = (
    _COMMON
    + r"""
sweep(tonumber(ARGV[1]), nil)
return redis.call('HKEYS', K[7])
"""
)

# ARGV: now -> live item count
SIZE = (
    _COMMON
    + r"""
sweep(tonumber(ARGV[1]), nil)
return redis.call('HLEN', K[1])
"""
)
