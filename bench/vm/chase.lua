-- chase.lua: chase.pna in Lua (LuaJIT): walk the list of region `nodes` (u64 next, all ones
-- at the end; u64 value) from byte offset head and sum the values, mod 2^64.
local ffi = require("ffi")
return { regions = { "nodes" }, run = function(r, head)
	local q = ffi.cast("const uint64_t *", r.nodes)
	local s, p = 0ULL, head
	while true do
		s = s + q[p / 8 + 1]
		local nx = q[p / 8]
		if nx == 0xffffffffffffffffULL then break end
		p = tonumber(nx)
	end
	return s
end }
