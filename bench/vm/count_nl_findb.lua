-- count_nl_findb.lua: count_nl_findb.pna in Lua (LuaJIT): the '\n' bytes of region `data`,
-- one plain string.find per line (Lua's library search, as findb is the VM's).
local find = string.find
return { regions = { "data" }, run = function(r)
	local s, c, pos = r.data_str, 0, 1
	while true do
		local at = find(s, "\n", pos, true)
		if not at then return c end
		c = c + 1
		pos = at + 1
	end
end }
