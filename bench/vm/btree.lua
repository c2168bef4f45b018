-- btree.lua: btree.c in Lua (LuaJIT): query i (u32) of region `bq` searches node i % number
-- of nodes of region `bnodes` (BT_KEYS = 256 sorted u32 keys each) by binary search; the sum
-- of the lower-bound positions.
local ffi = require("ffi")
local band, rshift = bit.band, bit.rshift
local BT_KEYS = 256
return { regions = { "bnodes", "bq" }, run = function(r)
	local keys = ffi.cast("const uint32_t *", r.bnodes)
	local q = ffi.cast("const uint32_t *", r.bq)
	local mask = r.bnodes_len / (4 * BT_KEYS) - 1
	local s = 0
	for i = 0, r.bq_len / 4 - 1 do
		local key, node = q[i], band(i, mask) * BT_KEYS
		local lo, hi = 0, BT_KEYS
		while lo < hi do
			local mid = rshift(lo + hi, 1)
			if keys[node + mid] < key then lo = mid + 1 else hi = mid end
		end
		s = s + lo
	end
	return s
end }
